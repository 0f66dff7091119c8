// The command-line subcommands of the convlab binary (no display needed):
//
//   convlab compute  --problem DESC --pass PASS --algo NAME --out OUT.npy [inputs] [options]
//   convlab map      --map NAME --problem DESC [--format text|json|npy|grid|tex] [--limit N]
//                    [--step-granularity element|line|tile|whole] [--out FILE]
//   convlab algos
//   convlab describe --problem DESC
//   convlab help [COMMAND] | --help | --version
//
// Exit status: 0 on success; 2 on bad input of any kind (unknown command or option, missing
// value, bad descriptor, bad .npy, shape mismatch, unknown pass/algorithm/map, unwritable
// output), with exactly one line on `err` starting "convlab: "; 1 on an internal error (a bug),
// also one line, or when the command's own check failed (`convlab bench`: measurements that
// failed verification; its files are written, the failures marked); 130 when interrupted by
// SIGINT / SIGTERM (bench, lesson check and demo first write what they finished; temporaries are
// removed). A command failed on bad input never leaves a file at --out.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace convlab {

// args: the command line without the program name. Never throws.
int run_cli(std::vector<std::string> args, std::ostream& out, std::ostream& err);

}  // namespace convlab
