#include "app/cli/analysis_command.h"

#include <filesystem>
#include <iostream>

#include "analysis/analysis_result.h"
#include "app/cli/figure_option.h"
#include "app/cli/figures.h"
#include "core/base/atomic_file.h"
#include "core/runtime/resources.h"
#include "core/runtime/model_input.h"
#include "core/runtime/run.h"

namespace poslens::cli {

PreparedAnalysis prepare_analysis(const std::string& what, const ModelOptions& m, const InputOptions& in,
                                  const std::string& out, int64_t output_bytes) {
  PreparedAnalysis p{load_model(m), {}};
  p.input.ids = input_ids(p.model, in);
  p.input.labels = token_labels(p.model, p.input.ids);
  check_resources(what, out, output_bytes,
                  forward_working_bytes(p.model.model->config(), 1, static_cast<int64_t>(p.input.ids.size()),
                                        p.model.model->dtype()));
  return p;
}

bool is_csv(const std::string& out) { return std::filesystem::path(out).extension() == ".csv"; }

void write_result(const std::string& out, const std::function<std::string()>& csv,
                  const std::function<void(const std::string&)>& hdf5) {
  if (is_csv(out))
    write_file_atomically(out, csv());
  else
    hdf5(out);
}

void finish_figure_and_say(const std::string& figure, const std::function<void(const std::string&)>& draw,
                           const std::string& out) {
  if (!figure.empty()) {
    draw(figure);
    std::cout << "wrote " << figure << "\n";
  }
  std::cout << "wrote " << out << "\n";
}

std::string decoupled_rope_note(const ModelConfig& c) {
  if (!c.latent_attention()) return {};
  return "decoupled RoPE: the components are each head's " + std::to_string(c.qk_rope_head_dim) +
         " rotary channels; its " + std::to_string(c.d_head - c.qk_rope_head_dim) +
         " no-position channels (qk_nope_head_dim) are not rotated (the remainder)\n";
}

std::string checkpoint_name(const std::string& checkpoint) {
  return std::filesystem::path(checkpoint).filename().string();
}

Command plain_analysis_command(const AnalysisEntry& entry) {
  struct Options {
    ModelOptions model;
    InputOptions input;
    std::string out, figure;
  };
  auto c = std::make_shared<Options>();
  return {[=](CLI::App& app) {
            auto* cmd = app.add_subcommand(entry.name, entry.title);
            add_model_options(cmd, c->model);
            add_input_options(cmd, c->input);
            cmd->add_option("--out", c->out, "Output file: .h5 or .csv")->required();
            add_figure_option(cmd, c->figure, "Also write the figure: .png, .pdf or .svg");
            return cmd;
          },
          [=] { require_input(c->input); },
          [=] {
            auto p = prepare_analysis(entry.name, c->model, c->input, c->out);
            const auto r = entry.run(p.model, p.input, progress_printer(entry.name));
            write_result(
                c->out, [&] { return r.csv; }, [&](const std::string& out) { r.write_hdf5(out, export_metadata(p.model)); });
            std::cout << entry.name << ": " << r.summary << "\n";
            finish_figure_and_say(
                c->figure,
                [&](const std::string& figure) {
                  if (!r.maps.empty())
                    write_maps_figure(figure, r.maps);
                  else
                    write_curves_figure(figure, r.curves);
                },
                c->out);
          }};
}

}  // namespace poslens::cli
