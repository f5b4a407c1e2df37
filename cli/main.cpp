// aiter-compat: the diagnostic command line. `aiter-compat probe` describes the installed AITer.
#include "cli.hpp"

int main(int argc, char** argv) { return aiter_compat::cli::run(argc, argv); }
