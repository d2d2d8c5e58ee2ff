//! The `cameleon` command line. Everything is in [`cameleon::cli`]; `cameleon --help` lists the
//! subcommands.

fn main() -> std::process::ExitCode {
    cameleon::cli::main()
}
