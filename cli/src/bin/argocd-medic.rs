//! `argocd-medic`: `medic` as the argocd CLI's plugin, so `argocd medic sweep ...` runs it (Argo
//! CD >= 3.1 execs `argocd-<name>` from the PATH for a command it does not know).

fn main() -> std::process::ExitCode {
    medic::app::main()
}
