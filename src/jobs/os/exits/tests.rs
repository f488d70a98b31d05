use super::*;
use crate::jobs::os::process::{Claim, Start};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};

fn sleeper() -> Child {
    Command::new("sleep")
        .arg("1000")
        .stdin(Stdio::null())
        .spawn()
        .unwrap()
}

fn recorded(pid: u32) -> ProcessRef {
    ProcessRef::new(pid, Claim::Recorded(Start::of(pid).unwrap()))
}

/// Waits for reports until `want` came, or fails after 10 s.
fn reported(waiter: &ExitWaiter, want: u64) -> Vec<u64> {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let mut seen = Vec::new();
    while !seen.contains(&want) {
        assert!(std::time::Instant::now() < deadline, "no report: {seen:?}");
        seen.extend(waiter.wait(Some(Duration::from_millis(200))).unwrap());
    }
    seen
}

#[test]
fn a_killed_process_is_reported_once_by_its_token() {
    let (mut set, waiter) = ExitSet::new(100).unwrap();
    let mut a = sleeper();
    let mut b = sleeper();
    let Watched::Watching(ta) = set.watch(&recorded(a.id())) else {
        panic!("not watched")
    };
    let Watched::Watching(tb) = set.watch(&recorded(b.id())) else {
        panic!("not watched")
    };
    assert_ne!(ta, tb);
    assert_eq!(set.len(), 2);
    assert_eq!(
        waiter.wait(Some(Duration::ZERO)).unwrap(),
        Vec::<u64>::new()
    );
    a.kill().unwrap();
    // Reported while it is still a zombie nobody reaped: ended is ended.
    assert_eq!(reported(&waiter, ta), [ta]);
    a.wait().unwrap();
    assert_eq!(
        waiter.wait(Some(Duration::from_millis(50))).unwrap(),
        Vec::<u64>::new(),
        "once"
    );
    set.unwatch(ta);
    // An unwatched process's end is not reported.
    set.unwatch(tb);
    b.kill().unwrap();
    b.wait().unwrap();
    assert_eq!(
        waiter.wait(Some(Duration::from_millis(50))).unwrap(),
        Vec::<u64>::new()
    );
    assert!(set.is_empty());
}

#[test]
fn a_process_that_ended_or_is_another_now_is_not_watched() {
    let (mut set, _waiter) = ExitSet::new(100).unwrap();
    let mut gone = sleeper();
    let was = recorded(gone.id());
    gone.kill().unwrap();
    gone.wait().unwrap();
    assert_eq!(set.watch(&was), Watched::Ended);
    // The number is alive, but held by a process that started at another time: a reused pid.
    let mut live = sleeper();
    let Claim::Recorded(mut start) = recorded(live.id()).claim else {
        unreachable!()
    };
    start.ticks -= 1;
    let earlier = ProcessRef::new(live.id(), Claim::Recorded(start));
    assert_eq!(set.watch(&earlier), Watched::Ended);
    // Pid 1 is nobody's.
    assert_eq!(
        set.watch(&ProcessRef::new(1, Claim::Unchecked)),
        Watched::Ended
    );
    assert!(set.is_empty(), "no descriptor kept for any of them");
    live.kill().unwrap();
    live.wait().unwrap();
}

#[test]
fn past_its_budget_the_set_refuses_and_says_why() {
    let (mut set, _waiter) = ExitSet::new(1).unwrap();
    let mut a = sleeper();
    let mut b = sleeper();
    assert!(matches!(set.watch(&recorded(a.id())), Watched::Watching(_)));
    assert_eq!(
        set.watch(&recorded(b.id())),
        Watched::Unwatchable(Refusal::Budget)
    );
    for c in [&mut a, &mut b] {
        c.kill().unwrap();
        c.wait().unwrap();
    }
}

#[test]
fn another_users_process_is_watched_too() {
    // Only root can start a process as another user; elsewhere there is nobody else's to use.
    if !rustix::process::geteuid().is_root() {
        return;
    }
    let mut child = Command::new("sleep")
        .arg("1000")
        .uid(65534)
        .gid(65534)
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let (mut set, waiter) = ExitSet::new(10).unwrap();
    let Watched::Watching(t) = set.watch(&recorded(child.id())) else {
        panic!("not watched")
    };
    child.kill().unwrap();
    assert_eq!(reported(&waiter, t), [t]);
    child.wait().unwrap();
}

#[test]
fn the_fd_budget_is_the_raised_limit_less_the_reserve() {
    let budget = raise_fd_limit();
    let limit = getrlimit(Resource::Nofile);
    assert_eq!(limit.current, limit.maximum, "soft raised to hard");
    if let Some(soft) = limit.current {
        assert_eq!(budget as u64, soft.saturating_sub(RESERVED_FDS));
    }
}
