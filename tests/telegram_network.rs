//! The Telegram bridge when the Bot API is down or refuses with a 429: an outage said once, a
//! `retry_after` waited out (the harness in tests/common/bridge.rs).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may panic: that is how they fail

mod common;

use std::io::Read;
use std::net::{Ipv4Addr, TcpListener};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use common::bridge::*;
use common::telegram::FakeBot;
use serde_json::json;

/// A port that accepts connections and drops them at once, counting them: a Bot API that is
/// down.
struct Dropper {
    port: u16,
    accepted: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
}

impl Dropper {
    fn start() -> Dropper {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let port = listener.local_addr().unwrap().port();
        let accepted = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (a, s) = (Arc::clone(&accepted), Arc::clone(&stop));
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if s.load(Ordering::SeqCst) {
                    return; // the listener closes with the thread
                }
                if let Ok(mut c) = conn {
                    let mut buf = [0u8; 64];
                    let _ = c.read(&mut buf);
                    a.fetch_add(1, Ordering::SeqCst);
                }
            }
        });
        Dropper {
            port,
            accepted,
            stop,
        }
    }

    fn stop(self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = std::net::TcpStream::connect((Ipv4Addr::LOCALHOST, self.port));
    }
}

#[test]
fn an_outage_is_said_once_and_a_429_is_waited_out() {
    let down = Dropper::start();
    let port = down.port;
    let mut w = World::with_api("", Some(format!("http://127.0.0.1:{port}")));
    let watcher = w.bridge();
    wait("three failed polls", || {
        (down.accepted.load(Ordering::SeqCst) >= 3).then_some(())
    });
    let err = watcher.stderr();
    assert_eq!(err.matches("cannot reach the Bot API").count(), 1, "{err}");
    no_token("the outage's words", &err);

    down.stop();
    w.bot = FakeBot::start_on(port);
    w.bot.script(
        "sendMessage",
        429,
        json!({"ok": false, "error_code": 429, "description": "Too Many Requests: retry after 1",
            "parameters": {"retry_after": 1}}),
    );
    let _asker = w.agent("180000-dddd", &ASK);
    w.bot.wait_message("Which database?");
    let sends = w.bot.calls_of("sendMessage");
    assert_eq!(sends.len(), 2, "refused once, then sent");
    assert!(
        sends[1].at.duration_since(sends[0].at) >= Duration::from_secs(1),
        "retry_after was honoured"
    );
    wait("the recovery said", || {
        watcher
            .stderr()
            .contains("the Bot API answers again")
            .then_some(())
    });
    let err = watcher.stderr();
    assert_eq!(err.matches("cannot reach the Bot API").count(), 1, "{err}");
    assert_eq!(err.matches("the Bot API answers again").count(), 1, "{err}");
    assert!(err.contains("429 retry_after"), "{err}");
    no_token("the watcher's stderr", &err);
}
