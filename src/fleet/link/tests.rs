//! The link against stand-ins for ssh: small shell scripts that speak (or fail to speak) the
//! wire, so every path of the link is driven without a network. The real ssh is in
//! tests/fleet_ssh.rs.

use std::path::Path;
use std::sync::mpsc::Receiver;

use super::*;
use crate::commands::fixtures;
use crate::jobs::wire::{Line, encode};

const GUARD: Duration = Duration::from_secs(20);

fn hello(protocol: u32, heartbeat_secs: u64) -> String {
    encode(&Line::Hello(Hello {
        protocol,
        luzia: "9.9.9".into(),
        host: "b".into(),
        root: "/srv/jobs".into(),
        projects: vec!["musica".into()],
        heartbeat_secs,
    }))
}

/// A link whose "ssh" is `sh -c SCRIPT`, its events sent to the returned channel.
fn link(script: String, timing: Timing) -> (Link, Receiver<LinkEvent>) {
    let (tx, rx) = mpsc::channel();
    let tx = std::sync::Mutex::new(tx);
    let on: OnEvent = Box::new(move |e| {
        if let Ok(tx) = tx.lock() {
            let _ = tx.send(e);
        }
    });
    let make: MakeCommand = Box::new(move || {
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg(&script);
        cmd
    });
    let link = Link::spawn(Session {
        name: "b".into(),
        host: HostConfig::new("ops@b.example"),
        on,
        timing,
        make,
    });
    (link, rx)
}

fn fast() -> Timing {
    Timing {
        first_backoff: Duration::from_millis(10),
        max_backoff: Duration::from_millis(40),
        hello_within: GUARD,
        incompatible_retry: GUARD * 10,
        heartbeat_misses: 3,
    }
}

fn next(rx: &Receiver<LinkEvent>) -> LinkEvent {
    rx.recv_timeout(GUARD).expect("an event within the guard")
}

/// `printf '%s\n' LINES` in a script, each line single-quoted.
fn print(lines: &[String]) -> String {
    lines
        .iter()
        .map(|l| format!("printf '%s\\n' {}", ssh::quote(l)))
        .collect::<Vec<_>>()
        .join("; ")
}

fn pid_in(path: &Path) -> u32 {
    let start = Instant::now();
    loop {
        if let Some(pid) = std::fs::read_to_string(path)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            return pid;
        }
        assert!(start.elapsed() < GUARD, "no pid in {}", path.display());
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        !s.rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    })
}

#[test]
fn the_stream_becomes_events_in_order() {
    let job = fixtures::jobs().remove(0);
    let lines = [
        hello(wire::PROTOCOL, 5),
        "a login banner, not ours".into(),
        encode(&Line::Job {
            change: Change::Raised,
            job: Box::new(Record::of(&job)),
            settled: Vec::new(),
        }),
        encode(&Line::Synced { jobs: 1 }),
        r#"{"type":"newer-than-us","x":1}"#.into(),
        encode(&Line::Gone { id: job.id.clone() }),
        encode(&Line::Heartbeat {
            at: fixtures::now(),
        }),
    ];
    let (_link, rx) = link(format!("{}; exec sleep 600", print(&lines)), fast());
    assert!(matches!(next(&rx), LinkEvent::Connecting));
    let LinkEvent::Hello(h) = next(&rx) else {
        panic!()
    };
    assert_eq!(
        (h.luzia.as_str(), h.projects.as_slice()),
        ("9.9.9", &["musica".to_owned()][..])
    );
    let LinkEvent::Job {
        change,
        job: record,
        ..
    } = next(&rx)
    else {
        panic!()
    };
    assert_eq!((change, &record.id), (Change::Raised, &job.id));
    assert!(matches!(next(&rx), LinkEvent::Synced));
    let LinkEvent::Gone(id) = next(&rx) else {
        panic!()
    };
    assert_eq!(id, job.id);
    assert!(matches!(next(&rx), LinkEvent::Heartbeat));
}

#[test]
fn another_protocol_is_incompatible_and_says_what_to_install() {
    let script = format!("{}; exec sleep 600", print(&[hello(wire::PROTOCOL + 1, 5)]));
    let (_link, rx) = link(script, fast());
    assert!(matches!(next(&rx), LinkEvent::Connecting));
    let LinkEvent::Incompatible { message } = next(&rx) else {
        panic!()
    };
    for part in ["host b runs luzia 9.9.9", "install luzia", VERSION] {
        assert!(message.contains(part), "{message}");
    }
    // Retried only slowly: nothing more within a moment.
    assert!(rx.recv_timeout(Duration::from_millis(300)).is_err());
}

#[test]
fn a_luzia_without_watch_is_incompatible() {
    let script = "echo \"error: unrecognized subcommand 'watch'\" >&2; exit 2".to_owned();
    let (_link, rx) = link(script, fast());
    assert!(matches!(next(&rx), LinkEvent::Connecting));
    let LinkEvent::Incompatible { message } = next(&rx) else {
        panic!()
    };
    assert!(
        message.contains("has no `watch`") && message.contains(VERSION),
        "{message}"
    );
}

#[test]
fn silence_past_three_heartbeats_is_down_and_kills_the_ssh() {
    let tmp = tempfile::tempdir().unwrap();
    let pid_file = tmp.path().join("pid");
    let script = format!(
        "echo $$ > {}; {}; exec sleep 600",
        ssh::quote(&pid_file.to_string_lossy()),
        print(&[hello(wire::PROTOCOL, 1)])
    );
    let (_link, rx) = link(script, fast());
    assert!(matches!(next(&rx), LinkEvent::Connecting));
    assert!(matches!(next(&rx), LinkEvent::Hello(_)));
    let pid = pid_in(&pid_file);
    let up = Instant::now();
    let LinkEvent::Down { error } = next(&rx) else {
        panic!()
    };
    assert!(
        up.elapsed() >= Duration::from_millis(2900),
        "{:?}",
        up.elapsed()
    );
    assert!(
        error.contains("no heartbeat") && error.contains("3 s"),
        "{error}"
    );
    assert!(!alive(pid), "the silent ssh {pid} was left running");
    assert!(matches!(next(&rx), LinkEvent::Connecting));
}

#[test]
fn failures_are_retried_with_a_doubling_backoff_up_to_its_cap() {
    let script = "echo 'ssh: connect to host b port 22: Connection refused' >&2; exit 255";
    let (link, rx) = link(script.into(), fast());
    let mut connecting = Vec::new();
    while connecting.len() < 5 {
        match next(&rx) {
            LinkEvent::Connecting => connecting.push(Instant::now()),
            LinkEvent::Down { error } => {
                assert!(error.contains("Connection refused"), "{error}");
                assert!(
                    error.contains("host b (ops@b.example) cannot be reached"),
                    "{error}"
                );
            }
            other => panic!("{other:?}"),
        }
    }
    drop(link);
    let gaps: Vec<Duration> = connecting.windows(2).map(|w| w[1] - w[0]).collect();
    for (gap, least) in gaps.iter().zip([10, 20, 40, 40]) {
        assert!(*gap >= Duration::from_millis(least), "{gaps:?}");
    }
}

#[test]
fn a_dropped_connection_reconnects_after_the_first_backoff_again() {
    let script = format!("{}; exit 0", print(&[hello(wire::PROTOCOL, 5)]));
    let (_link, rx) = link(script, fast());
    for _ in 0..3 {
        assert!(matches!(next(&rx), LinkEvent::Connecting));
        assert!(matches!(next(&rx), LinkEvent::Hello(_)));
        let LinkEvent::Down { error } = next(&rx) else {
            panic!()
        };
        assert!(error.contains("watch ended"), "{error}");
    }
}

#[test]
fn dropping_the_link_kills_its_ssh_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let pid_file = tmp.path().join("pid");
    let script = format!(
        "echo $$ > {}; exec sleep 600",
        ssh::quote(&pid_file.to_string_lossy())
    );
    let (link, rx) = link(script, fast());
    assert!(matches!(next(&rx), LinkEvent::Connecting));
    let pid = pid_in(&pid_file);
    assert!(alive(pid));
    let start = Instant::now();
    drop(link);
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    assert!(!alive(pid), "ssh {pid} outlived its link");
}
