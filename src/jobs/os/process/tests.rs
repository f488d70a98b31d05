use super::*;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn own_pid_is_alive_and_impossible_pids_are_not() {
    assert!(is_alive(std::process::id()));
    assert!(!is_alive(0));
    assert!(!is_alive(u32::MAX));
    // Above the kernel's largest pid_max (2^22).
    assert!(!is_alive(999_999_999));
}

#[test]
fn a_reaped_child_is_dead_and_an_unreaped_one_is_a_zombie() {
    let mut child = Command::new("true").spawn().unwrap();
    let pid = child.id();
    // Not yet reaped: the pid exists as a zombie, which must not read as alive.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !is_zombie(pid) {
        assert!(Instant::now() < deadline, "`true` never ended");
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(!is_alive(pid));
    let me = ProcessRef::new(pid, Claim::Unchecked);
    assert_eq!(me.find(), Found::Gone, "a zombie is gone");
    child.wait().unwrap();
    assert!(!is_alive(pid));
}

#[test]
fn the_start_time_is_read_after_the_last_parenthesis() {
    let line = b"4242 (a (b) c) S) R 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 \
                 1000 20 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n";
    assert_eq!(
        parse_stat(line),
        Some(Stat {
            state: b'R',
            pgrp: 4242,
            start: 987654
        })
    );
    // pid 1 as this kind of system writes it, and a zombie.
    let init = b"1 (process_api) S 0 0 0 0 -1 4194560 74094 103190057 0 43678 219 1429 230359 \
                 81862 10 -10 13 0 24 45649920 3702";
    assert_eq!(parse_stat(init).map(|s| s.start), Some(24));
    let z = b"77 (x) Z 1 77 77 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 5 0 0";
    assert!(parse_stat(z).is_some_and(Stat::is_zombie));
    for bad in [
        &b""[..],
        b"12 (cut",
        b"12 (x) S 1 2",
        b"12 (x) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 x",
    ] {
        assert_eq!(parse_stat(bad), None, "{:?}", String::from_utf8_lossy(bad));
    }
}

#[test]
fn a_recorded_start_names_exactly_one_process() {
    let me = std::process::id();
    let start = Start::of(me).unwrap();
    assert_eq!(
        ProcessRef::new(me, Claim::Recorded(start.clone())).find(),
        Found::Ours
    );
    let later = Start {
        ticks: start.ticks + 1,
        ..start.clone()
    };
    assert_eq!(
        ProcessRef::new(me, Claim::Recorded(later)).find(),
        Found::Other,
        "the same pid with another start is another process"
    );
    if boot_id().is_some() {
        let other_boot = Start {
            boot_id: Some("00000000-0000-0000-0000-000000000000".into()),
            ..start.clone()
        };
        assert_eq!(
            ProcessRef::new(me, Claim::Recorded(other_boot)).find(),
            Found::Other,
            "a start recorded in another boot names nobody now"
        );
    }
    assert_eq!(
        ProcessRef::new(999_999_999, Claim::Recorded(start)).find(),
        Found::Gone
    );
}

#[test]
fn pid_1_is_nobodys_whatever_is_claimed() {
    for claim in [
        Claim::Unchecked,
        Claim::StartedNear(0),
        Claim::Recorded(Start::of(1).unwrap_or(Start {
            ticks: 0,
            boot_id: None,
        })),
    ] {
        let init = ProcessRef::new(1, claim);
        assert_eq!(init.find(), Found::Other, "{init:?}");
        assert!(matches!(
            init.signal(Signal::TERM),
            Err(SignalError::NotOurs(1))
        ));
    }
}

#[test]
fn a_plain_pid_is_taken_only_near_the_time_it_should_have_started() {
    let mut child = Command::new("sleep").arg("30").spawn().unwrap();
    let pid = child.id();
    let now = chrono::Utc::now().timestamp();
    let near = |t: i64| ProcessRef::new(pid, Claim::StartedNear(t)).find();
    assert_eq!(near(now), Found::Ours);
    assert_eq!(near(now - NEAR_AFTER_SECS + 2), Found::Ours);
    assert_eq!(near(now + NEAR_BEFORE_SECS - 5), Found::Ours);
    assert_eq!(
        near(now - 3600),
        Found::Other,
        "started an hour after the job: a reused pid"
    );
    assert_eq!(
        near(now + 3600),
        Found::Other,
        "started an hour before the job: not its process"
    );
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(near(now), Found::Gone);
}

#[test]
fn a_signal_never_reaches_a_process_that_is_not_the_one_meant() {
    let mut child = Command::new("sleep").arg("30").spawn().unwrap();
    let pid = child.id();
    let start = Start::of(pid).unwrap();
    let impostor = ProcessRef::new(
        pid,
        Claim::Recorded(Start {
            ticks: start.ticks.wrapping_sub(1),
            ..start.clone()
        }),
    );
    assert!(matches!(
        impostor.signal(Signal::KILL),
        Err(SignalError::NotOurs(p)) if p == pid
    ));
    assert!(matches!(
        impostor.signal_group(Signal::KILL),
        Err(SignalError::NotOurs(_))
    ));
    assert!(is_alive(pid), "left alone");
    let real = ProcessRef::new(pid, Claim::Recorded(start));
    real.signal(Signal::KILL).unwrap();
    child.wait().unwrap();
    assert!(matches!(
        real.signal(Signal::KILL),
        Err(SignalError::Gone(_))
    ));
}

#[test]
fn a_group_outlives_its_leader_and_can_still_be_stopped() {
    // The leader starts a member and ends; the member lives on in its group.
    let mut leader = Command::new("sh")
        .args(["-c", "sleep 30 >/dev/null 2>&1 & echo $!"])
        .stdout(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    let pgid = leader.id();
    let start = Start::of(pgid).unwrap();
    let mut out = String::new();
    leader
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    leader.wait().unwrap();
    let member: u32 = out.trim().parse().unwrap();
    let group = ProcessRef::new(pgid, Claim::Recorded(start));
    assert_eq!(group.find(), Found::Gone, "the leader has ended");
    assert_eq!(group.find_group(), Found::Ours, "its member has not");
    group.signal_group(Signal::KILL).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while is_alive(member) {
        assert!(Instant::now() < deadline, "the member outlived SIGKILL");
        std::thread::sleep(Duration::from_millis(10));
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while group.find_group() != Found::Gone {
        assert!(Instant::now() < deadline, "the group never emptied");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_stopped_process_is_alive_and_said_to_be_stopped_until_continued() {
    let mut child = Command::new("sleep").arg("30").spawn().unwrap();
    let me = ProcessRef::new(child.id(), Claim::Recorded(Start::of(child.id()).unwrap()));
    assert!(!me.is_stopped());
    me.signal(Signal::STOP).unwrap();
    let until = |stopped: bool| {
        let deadline = Instant::now() + Duration::from_secs(10);
        while me.is_stopped() != stopped {
            assert!(Instant::now() < deadline, "never stopped={stopped}");
            std::thread::sleep(Duration::from_millis(5));
        }
    };
    until(true);
    assert!(me.is_alive());
    me.signal(Signal::CONT).unwrap();
    until(false);
    let _ = child.kill();
    let _ = child.wait();
    assert!(!me.is_stopped(), "a process that is gone is not stopped");
}
