// convlab: the command-line subcommands over the engine (see cli/cli.hpp).
#include <iostream>
#include <string>
#include <vector>

#include "cli/cli.hpp"

int main(int argc, char** argv) {
    std::vector<std::string> args(argv + 1, argv + argc);
    return convlab::run_cli(std::move(args), std::cout, std::cerr);
}
