//! The stop signals (SIGTERM, SIGINT, SIGHUP) of a command that waits for a person (`luzia
//! ask`, `gate`, `mcp`): caught from the moment this is called, so that the command can
//! withdraw what it asked before it exits instead of leaving it pending to nobody's benefit.

use std::io;

use tokio::signal::unix::{SignalKind, signal};

/// `SIGTERM`, `SIGINT`, `SIGHUP`, or the number.
pub fn signal_name(signal: i32) -> String {
    match signal {
        1 => "SIGHUP".into(),
        2 => "SIGINT".into(),
        15 => "SIGTERM".into(),
        n => format!("signal {n}"),
    }
}

/// Runs `then` with the signal's number on a thread of its own when the first stop signal
/// arrives. The handlers are installed before this returns: a signal from the first moment
/// counts.
pub fn on_stop_signal(then: impl FnOnce(i32) + Send + 'static) -> io::Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let (mut term, mut int, mut hup) = {
        let _inside = rt.enter();
        (
            signal(SignalKind::terminate())?,
            signal(SignalKind::interrupt())?,
            signal(SignalKind::hangup())?,
        )
    };
    std::thread::Builder::new()
        .name("luzia-signals".into())
        .spawn(move || {
            let n = rt.block_on(async {
                tokio::select! {
                    _ = term.recv() => 15,
                    _ = int.recv() => 2,
                    _ = hup.recv() => 1,
                }
            });
            then(n);
        })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signals_are_named_as_a_person_knows_them() {
        assert_eq!(signal_name(15), "SIGTERM");
        assert_eq!(signal_name(1), "SIGHUP");
        assert_eq!(signal_name(9), "signal 9");
    }
}
