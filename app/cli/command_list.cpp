// Every poslens-cli subcommand, in the order --help lists them: a new one is one line here
// (and its own file, which defines its Command).
#include "app/cli/command.h"

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
Command sweep_command();
Command merge_command();
Command tokenize_command();

std::vector<Command> all_commands() {
  return {info_command(),        run_command(),         generate_command(),
          convert_command(),     train_command(),       eval_command(),
          probe_command(),       frequencies_command(), compare_command(),
          u_shape_command(),
          position_map_command(), heads_command(),      massive_activations_command(),
          frequency_usage_command(), divergence_command(), length_loss_command(),
          position_offset_command(), heinsen_states_command(), sweep_command(),
          merge_command(),       tokenize_command()};
}

}  // namespace poslens::cli
