use super::*;
use crate::jobs::os::process::{Claim, ProcessRef, Start};
use std::process::{Child, Command, Stdio};
use std::time::Instant;

fn sleeper() -> Child {
    Command::new("sleep")
        .arg("1000")
        .stdin(Stdio::null())
        .spawn()
        .unwrap()
}

fn this(child: &Child) -> ProcessRef {
    ProcessRef::new(child.id(), Claim::Recorded(Start::of(child.id()).unwrap()))
}

fn supervised(main: &Child, agent: Option<&Child>) -> Processes {
    Processes {
        main: Some(this(main)),
        agent: agent.map(this),
    }
}

fn id(s: &str) -> JobId {
    JobId::parse(s).unwrap()
}

fn end(child: &mut Child) {
    child.kill().unwrap();
    child.wait().unwrap();
}

/// What the waiter reports within 10 s, handed to `watch` as the reads worker does.
fn ends_reported(waiter: &ExitWaiter, watch: &mut ExitWatch, want: usize) -> Vec<JobId> {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut ended = Vec::new();
    let mut tokens = 0;
    while tokens < want {
        assert!(
            Instant::now() < deadline,
            "{tokens} of {want} ends reported"
        );
        let got = waiter.wait(Some(Duration::from_millis(200))).unwrap();
        tokens += got.len();
        ended.extend(watch.ended(&got));
    }
    ended
}

#[test]
fn a_killed_jobs_end_is_an_event_and_it_is_not_polled() {
    let (set, waiter) = ExitSet::new(100).unwrap();
    let mut watch = ExitWatch::new(Some(set));
    let (mut a, b) = (sleeper(), sleeper());
    let job = id("120000-aaaa");
    assert!(!watch.update(&job, Some(&supervised(&a, None))));
    assert!(!watch.update(&id("120000-bbbb"), Some(&supervised(&b, None))));
    assert_eq!(watch.counts(), (2, 0));
    // Read again, unchanged: nothing opened anew.
    assert!(!watch.update(&job, Some(&supervised(&a, None))));
    end(&mut a);
    assert!(
        watch.polled_gone().is_empty(),
        "an end reported by event is not polled"
    );
    assert_eq!(
        ends_reported(&waiter, &mut watch, 1),
        std::slice::from_ref(&job)
    );
    // Read again, it has ended: forgotten.
    assert!(!watch.update(&job, None));
    assert_eq!(watch.counts(), (1, 0));
    watch.retain(|_| false);
    assert_eq!(watch.counts(), (0, 0));
    let mut b = b;
    end(&mut b);
}

#[test]
fn a_job_ends_with_the_last_of_its_processes() {
    let (set, waiter) = ExitSet::new(100).unwrap();
    let mut watch = ExitWatch::new(Some(set));
    let (mut supervisor, mut agent) = (sleeper(), sleeper());
    let job = id("120000-cccc");
    assert!(!watch.update(&job, Some(&supervised(&supervisor, Some(&agent)))));
    end(&mut supervisor);
    assert!(
        ends_reported(&waiter, &mut watch, 1).is_empty(),
        "its agent lives on"
    );
    end(&mut agent);
    assert_eq!(ends_reported(&waiter, &mut watch, 1), [job]);
}

#[test]
fn a_process_gone_or_reused_before_it_is_watched_has_its_job_read_again() {
    let (set, _waiter) = ExitSet::new(100).unwrap();
    let mut watch = ExitWatch::new(Some(set));
    let mut gone = sleeper();
    let processes = supervised(&gone, None);
    end(&mut gone);
    let job = id("120000-dddd");
    assert!(watch.update(&job, Some(&processes)), "ended meanwhile");
    // Until the read says otherwise, it is asked after.
    assert_eq!(watch.polled_gone(), [job]);
    // A live pid that started at another time than recorded: another process.
    let mut live = sleeper();
    let mut reused = supervised(&live, None);
    if let Some(ProcessRef {
        claim: Claim::Recorded(start),
        ..
    }) = &mut reused.main
    {
        start.ticks -= 1;
    }
    assert!(watch.update(&id("120000-eeee"), Some(&reused)));
    end(&mut live);
}

#[test]
fn what_cannot_be_watched_is_polled_as_before() {
    // No pidfd left under the budget: the one live job is polled.
    let (set, _waiter) = ExitSet::new(0).unwrap();
    let mut watch = ExitWatch::new(Some(set));
    let mut child = sleeper();
    let job = id("120000-ffff");
    assert!(!watch.update(&job, Some(&supervised(&child, None))));
    assert_eq!(watch.counts(), (0, 1));
    assert!(watch.polled_gone().is_empty(), "alive");
    end(&mut child);
    assert_eq!(watch.polled_gone(), [job]);
    // A job with no process known yet is asked after on every tick (its start-up grace).
    let mut none = ExitWatch::new(None);
    let starting = id("120000-0000");
    assert!(!none.update(&starting, Some(&Processes::default())));
    assert_eq!(none.polled_gone(), [starting]);
}

#[test]
fn when_waiting_fails_every_live_job_is_polled() {
    let (set, _waiter) = ExitSet::new(100).unwrap();
    let mut watch = ExitWatch::new(Some(set));
    let mut child = sleeper();
    let job = id("120000-1111");
    assert!(!watch.update(&job, Some(&supervised(&child, None))));
    watch.poll_all();
    assert_eq!(watch.counts(), (0, 1));
    end(&mut child);
    assert_eq!(watch.polled_gone(), [job]);
}
