// Every poslens-cli subcommand, in the order --help lists them: the model commands, then one per
// analysis of the registry (analysis/analysis_registry.h), then the tools. An analysis with
// options of its own has its file (which defines its Command) and one line in kAnalysisCommands;
// a plain one (AnalysisEntry::run) gets plain_analysis_command and nothing here. A new tool is
// its file and one line in all_commands().
#include "app/cli/command.h"

#include <string>

#include "analysis/analysis_registry.h"
#include "app/cli/analysis_command.h"
#include "core/base/error.h"

namespace poslens::cli {

Command info_command();
Command run_command();
Command generate_command();
Command convert_command();
Command train_command();
Command eval_command();
Command probe_command();
Command frequencies_command();
Command compare_command();
Command u_shape_command();
Command position_map_command();
Command heads_command();
Command massive_activations_command();
Command frequency_usage_command();
Command divergence_command();
Command length_loss_command();
Command heinsen_states_command();
Command position_offset_command();
Command needle_sweep_command();
Command sweep_command();
Command merge_command();
Command tokenize_command();

namespace {

struct AnalysisCommand {
  const char* analysis;  ///< its registry name, which is also the subcommand's
  Command (*make)();
};

constexpr AnalysisCommand kAnalysisCommands[] = {
    {"probe", probe_command},
    {"frequencies", frequencies_command},
    {"compare", compare_command},
    {"u-shape", u_shape_command},
    {"position-map", position_map_command},
    {"heads", heads_command},
    {"massive-activations", massive_activations_command},
    {"frequency-usage", frequency_usage_command},
    {"divergence", divergence_command},
    {"length-loss", length_loss_command},
    {"position-offset", position_offset_command},
    {"heinsen-states", heinsen_states_command},
    {"needle-sweep", needle_sweep_command},
};

}  // namespace

std::vector<Command> all_commands() {
  std::vector<Command> commands = {info_command(),    run_command(),   generate_command(),
                                   convert_command(), train_command(), eval_command()};
  for (const auto& entry : analysis_entries()) {
    bool found = false;
    for (const auto& bound : kAnalysisCommands)
      if (std::string(entry.name) == bound.analysis) {
        commands.push_back(bound.make());
        found = true;
      }
    if (!found && entry.run) {  // a plain analysis: the generic subcommand
      commands.push_back(plain_analysis_command(entry));
      found = true;
    }
    // CliAnalyses.EveryRegistryAnalysisIsASubcommand… keeps this from happening in a release.
    if (!found) throw Error(std::string("poslens-cli has no subcommand for the analysis \"") + entry.name + "\"");
  }
  for (const auto& tool : {sweep_command, merge_command, tokenize_command}) commands.push_back(tool());
  return commands;
}

}  // namespace poslens::cli
