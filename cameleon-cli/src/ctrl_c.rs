//! Ctrl-C: the first one cancels the run (it stops after the current step), the second exits.

use super::exit;

/// A token cancelled by the first Ctrl-C; a second Ctrl-C exits at once with
/// [`exit::CANCELLED`].
pub(super) fn cancel_on_ctrl_c() -> cameleon::CancelToken {
    let token = cameleon::CancelToken::new();
    let cancel = token.clone();
    let listener = std::thread::Builder::new()
        .name("cameleon-ctrl-c".into())
        .spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return; // no signal handling: Ctrl-C keeps its default effect
            };
            rt.block_on(async {
                if tokio::signal::ctrl_c().await.is_ok() {
                    // Say it before cancelling: the run may end, and the process exit, at once.
                    eprintln!(
                        "\ninterrupted: stopping after the current step (Ctrl-C again to quit now)"
                    );
                    cancel.cancel();
                    if tokio::signal::ctrl_c().await.is_ok() {
                        std::process::exit(exit::CANCELLED);
                    }
                }
            });
        });
    drop(listener); // detached: it lives as long as the process
    token
}
