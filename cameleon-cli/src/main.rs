//! The `cameleon` command line. Everything is in the `cameleon_cli` library; `cameleon --help`
//! lists the subcommands.

fn main() -> std::process::ExitCode {
    cameleon_cli::main()
}
