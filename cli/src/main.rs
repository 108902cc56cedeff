//! `medic`: Argo Medic on the command line ([`medic::app`]).

fn main() -> std::process::ExitCode {
    medic::app::main()
}
