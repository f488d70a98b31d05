use super::*;
use crate::jobs::{JobId, Status};

#[test]
fn high_first_then_oldest_and_each_taken_once() {
    let d = tempfile::tempdir().unwrap();
    let a = enqueue(d.path(), "p", "a", Priority::Normal, "me").unwrap();
    let b = enqueue(d.path(), "p", "b", Priority::High, "me").unwrap();
    let c = enqueue(d.path(), "p", "c", Priority::Normal, "me").unwrap();
    let order: Vec<String> = list(d.path())
        .unwrap()
        .into_iter()
        .map(|q| q.task)
        .collect();
    assert_eq!(order, ["b", "a", "c"]);
    assert_eq!(cancel(d.path(), &c.id).unwrap().task, "c");
    assert!(matches!(
        cancel(d.path(), "nope"),
        Err(QueueError::NotFound(_))
    ));
    let slots = Slots::lock(d.path()).unwrap();
    let next = |slots: &Slots| {
        slots.claim_next().unwrap().map(|c| {
            let id = c.entry().id.clone();
            c.started();
            id
        })
    };
    assert_eq!(next(&slots), Some(b.id));
    assert_eq!(next(&slots), Some(a.id));
    assert_eq!(next(&slots), None);
    assert!(list(d.path()).unwrap().is_empty());
}

#[test]
fn an_entry_is_written_as_protocol_md_says_byte_for_byte() {
    let d = tempfile::tempdir().unwrap();
    let q = enqueue(d.path(), "musica", "Run tests", Priority::High, "admin").unwrap();
    let written = std::fs::read(&q.path).unwrap();
    // The form the queue had always been written in: these keys, in this order, pretty.
    let expected = serde_json::to_vec_pretty(&serde_json::json!({
        "id": q.id, "project": "musica", "priority": 1, "prompt": "Run tests",
        "enqueued_at": q.enqueued_at, "enqueued_by": "admin", "status": "pending",
    }))
    .unwrap();
    assert_eq!(
        String::from_utf8(written).unwrap(),
        String::from_utf8(expected).unwrap()
    );
    assert!(q.path.starts_with(d.path().join("pending/high")));
}

#[test]
fn entries_are_read_leniently() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("pending/normal");
    std::fs::create_dir_all(&dir).unwrap();
    let put = |name: &str, body: &str| std::fs::write(dir.join(name), body).unwrap();
    // The orchestrator's form, with a field luzia does not know.
    put(
        "5_20260109T153045.000001_musica_a1b2c3d4.json",
        r#"{"id": "a1b2c3d4", "project": "musica", "priority": 5, "prompt": "Run tests",
           "skill_match": "test-runner", "enqueued_at": "2026-01-09T15:30:45Z",
           "enqueued_by": "admin", "status": "pending"}"#,
    );
    put(
        "5_20260109T153045.000002_x_odd.json",
        r#"{"id": 7, "project": ["x"], "priority": "high", "prompt": null}"#,
    );
    put("5_20260109T153045.000003_x_list.json", "[1, 2]");
    put("5_20260109T153045.000004_x_torn.json", "{\"id\": ");
    let all = list(d.path()).unwrap();
    let seen: Vec<(&str, &str, &str, &str)> = all
        .iter()
        .map(|q| {
            (
                q.id.as_str(),
                q.project.as_str(),
                q.task.as_str(),
                q.enqueued_by.as_str(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("a1b2c3d4", "musica", "Run tests", "admin"),
            ("7", "", "", ""),
            ("", "", "", ""),
        ],
        "a torn file is left out until it is whole"
    );
}

#[test]
fn every_entry_is_one_row_in_order_keyed_apart_from_jobs() {
    let q = |id: &str| Queued {
        id: id.into(),
        project: "p".into(),
        priority: Priority::Normal,
        task: format!("task {id}"),
        enqueued_at: String::new(),
        enqueued_by: String::new(),
        project_path: None,
        agent: None,
        path: PathBuf::from("/q").join(id),
    };
    let rows = rows(&[q("00c885a0"), q("../../etc"), q("00c885a0"), q("")]);
    let keys: Vec<&str> = rows.iter().map(|j| j.id.as_str()).collect();
    assert_eq!(
        keys,
        ["queued:00c885a0", "queued:#2", "queued:#3", "queued:#4"]
    );
    for (i, row) in rows.iter().enumerate() {
        assert_eq!(row.status, Status::Queued);
        assert_eq!(row.queue_position, Some(i as u32 + 1));
        assert!(row.id.is_queued());
        assert_ne!(row.id, JobId::parse("00c885a0").unwrap());
    }
    assert_eq!(rows[0].shown_id(), "00c885a0");
    assert_eq!(rows[0].task(), "task 00c885a0");
    assert_eq!(
        rows[1].shown_id(),
        "../../etc",
        "shown as text, never a path"
    );
}

#[test]
fn racing_starters_never_take_one_task_twice() {
    let d = tempfile::tempdir().unwrap();
    for i in 0..40 {
        enqueue(d.path(), "p", &i.to_string(), Priority::Normal, "me").unwrap();
    }
    // Each starter takes the lock for each task, as the dispatcher does.
    let take = || {
        let slots = Slots::lock(d.path()).unwrap();
        slots.claim_next().unwrap().map(|c| {
            let task = c.entry().task.clone();
            c.started();
            task
        })
    };
    let taken: Vec<String> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..4)
            .map(|_| s.spawn(|| std::iter::from_fn(take).collect::<Vec<_>>()))
            .collect();
        hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    let mut sorted = taken.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), 40);
    assert_eq!(taken.len(), 40);
}

/// The files of every state, as `state/priority/name`.
fn tree(queue: &Path) -> Vec<String> {
    task_dirs(queue)
        .iter()
        .flat_map(|d| {
            std::fs::read_dir(d)
                .into_iter()
                .flatten()
                .filter_map(Result::ok)
                .map(|e| {
                    let p = e.path();
                    p.strip_prefix(queue).unwrap().display().to_string()
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn a_claimed_task_is_listed_first_until_settled_and_cannot_be_cancelled() {
    let d = tempfile::tempdir().unwrap();
    let a = enqueue(d.path(), "p", "a", Priority::Normal, "me").unwrap();
    let b = enqueue(d.path(), "p", "b", Priority::High, "me").unwrap();
    let slots = Slots::lock(d.path()).unwrap();
    let claim = slots.claim_next().unwrap().unwrap();
    assert_eq!(claim.entry().id, b.id);
    assert!(
        claim
            .entry()
            .path
            .starts_with(d.path().join("starting/high"))
    );
    let order: Vec<String> = list(d.path()).unwrap().into_iter().map(|q| q.id).collect();
    assert_eq!(
        order,
        [b.id.clone(), a.id.clone()],
        "still in the queue, next"
    );
    assert!(matches!(
        cancel(d.path(), &b.id),
        Err(QueueError::Starting(_))
    ));
    let back = claim.release().unwrap();
    assert_eq!(back.path, b.path, "back where it was");
    assert_eq!(cancel(d.path(), &b.id).unwrap().id, b.id);
}

#[test]
fn a_failed_task_keeps_its_reason_is_listed_and_can_be_retried_or_cancelled() {
    let d = tempfile::tempdir().unwrap();
    let a = enqueue(d.path(), "p", "a", Priority::Normal, "me").unwrap();
    let name = a.path.file_name().unwrap().to_owned();
    let slots = Slots::lock(d.path()).unwrap();
    let failed_one = slots
        .claim_next()
        .unwrap()
        .unwrap()
        .fail("the project directory /gone does not exist")
        .unwrap();
    assert_eq!(
        tree(d.path()),
        [format!("failed/normal/{}", name.to_string_lossy())]
    );
    let written: Value =
        serde_json::from_slice(&std::fs::read(&failed_one.entry.path).unwrap()).unwrap();
    assert_eq!(written["status"], "failed");
    assert_eq!(
        written["reason"],
        "the project directory /gone does not exist"
    );
    assert_eq!(written["prompt"], "a", "the task is kept");
    assert!(list(d.path()).unwrap().is_empty(), "not waiting any more");
    let f = failed(d.path()).unwrap();
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].entry.id, a.id);
    assert_eq!(f[0].reason, "the project directory /gone does not exist");

    let rows = listed_rows(d.path());
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].status, Status::Failed);
    assert_eq!(rows[0].id, JobId::queued(&a.id).unwrap());
    assert_eq!(rows[0].queue_position, None);
    assert!(rows[0].problems[0].message.contains("/gone does not exist"));

    drop(slots);
    assert!(matches!(
        retry(d.path(), "nope"),
        Err(QueueError::NotFound(_))
    ));
    let back = retry(d.path(), &a.id).unwrap();
    assert_eq!(back.path, a.path, "back at its place");
    let written: Value = serde_json::from_slice(&std::fs::read(&back.path).unwrap()).unwrap();
    assert_eq!(written["status"], "pending");
    assert!(written.get("reason").is_none());
    assert!(matches!(
        retry(d.path(), &a.id),
        Err(QueueError::NotFailed(_))
    ));

    let slots = Slots::lock(d.path()).unwrap();
    slots.claim_next().unwrap().unwrap().fail("again").unwrap();
    drop(slots);
    assert_eq!(cancel(d.path(), &a.id).unwrap().id, a.id);
    assert!(tree(d.path()).is_empty());
}

#[test]
fn a_failure_that_cannot_be_recorded_leaves_the_task_queued() {
    let d = tempfile::tempdir().unwrap();
    let a = enqueue(d.path(), "p", "a", Priority::Normal, "me").unwrap();
    // `failed/` cannot be made: a file is in its way (as a full disk would refuse it).
    std::fs::write(d.path().join("failed"), "").unwrap();
    let slots = Slots::lock(d.path()).unwrap();
    let e = slots
        .claim_next()
        .unwrap()
        .unwrap()
        .fail("disk full")
        .unwrap_err();
    assert!(e.to_string().contains("stays queued"), "{e}");
    assert_eq!(list(d.path()).unwrap()[0].path, a.path, "back in pending/");
}

fn job_with_meta(root: &Path, id: &str, meta: Value) {
    let dir = root.join(id);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("meta.json"), meta.to_string()).unwrap();
}

#[test]
fn what_a_dead_starter_left_is_settled_by_whether_its_job_exists() {
    let d = tempfile::tempdir().unwrap();
    let queue = d.path().join("queue");
    let root = d.path().join("jobs");
    std::fs::create_dir_all(&root).unwrap();
    let with_job = enqueue(&queue, "p", "has a job", Priority::Normal, "me").unwrap();
    let without = enqueue(&queue, "p", "no job yet", Priority::High, "me").unwrap();
    {
        // A starter claims both, creates one job, and dies before settling either.
        let slots = Slots::lock(&queue).unwrap();
        let first = slots.claim_next().unwrap().unwrap();
        let second = slots.claim_next().unwrap().unwrap();
        assert_eq!(first.entry().id, without.id);
        std::mem::forget(first);
        std::mem::forget(second);
    }
    job_with_meta(
        &root,
        "120000-aaaa",
        serde_json::json!({
        "queue_id": with_job.id, "project": "p", "task": "has a job"}),
    );
    // A job of the same id in another project, and one with no queue id: not the task's.
    job_with_meta(
        &root,
        "120000-bbbb",
        serde_json::json!({
        "queue_id": without.id, "project": "other", "task": "no job yet"}),
    );
    job_with_meta(
        &root,
        "120000-cccc",
        serde_json::json!({"project": "p", "task": "no job yet"}),
    );
    let slots = Slots::lock(&queue).unwrap();
    let back = slots.recover(&root).unwrap();
    assert_eq!(back.len(), 1);
    assert_eq!(back[0].id, without.id);
    assert_eq!(back[0].path, without.path);
    let left: Vec<String> = list(&queue).unwrap().into_iter().map(|q| q.id).collect();
    assert_eq!(
        left,
        [without.id],
        "the task with a job left the queue, the other waits again"
    );
    assert!(tree(&queue).iter().all(|p| p.starts_with("pending/")));
}

#[test]
fn failed_rows_come_first_in_a_stable_order_and_never_share_a_key() {
    let d = tempfile::tempdir().unwrap();
    let mut ids = Vec::new();
    for t in ["a", "b", "c"] {
        ids.push(
            enqueue(d.path(), "p", t, Priority::Normal, "me")
                .unwrap()
                .id,
        );
    }
    let slots = Slots::lock(d.path()).unwrap();
    for _ in 0..2 {
        slots.claim_next().unwrap().unwrap().fail("no").unwrap();
    }
    drop(slots);
    let rows = listed_rows(d.path());
    let shown: Vec<(Status, Option<u32>)> =
        rows.iter().map(|r| (r.status, r.queue_position)).collect();
    assert_eq!(
        shown,
        [
            (Status::Failed, None),
            (Status::Failed, None),
            (Status::Queued, Some(1))
        ]
    );
    let mut keys: Vec<&JobId> = rows.iter().map(|r| &r.id).collect();
    assert!(keys[0] < keys[1], "failed rows sorted by key");
    keys.dedup();
    assert_eq!(keys.len(), 3);
    assert!(rows.iter().all(|r| r.id.is_queued()));
}

#[test]
fn a_task_seen_both_starting_and_failed_is_listed_once_as_failed() {
    // What a listing sees when a starter moves the task from `starting/` to `failed/` between
    // its reads of the two directories: the same file in both.
    let d = tempfile::tempdir().unwrap();
    let a = enqueue(d.path(), "p", "a", Priority::Normal, "me").unwrap();
    let b = enqueue(d.path(), "p", "b", Priority::Normal, "me").unwrap();
    let slots = Slots::lock(d.path()).unwrap();
    let claim = slots.claim_next().unwrap().unwrap();
    assert_eq!(claim.entry().id, a.id);
    let starting = claim.entry().path.clone();
    let failed_copy = State::Failed
        .dir(d.path(), Priority::Normal)
        .join(starting.file_name().unwrap());
    std::fs::create_dir_all(failed_copy.parent().unwrap()).unwrap();
    std::fs::copy(&starting, &failed_copy).unwrap();

    let seen = listing(d.path()).unwrap();
    let queued: Vec<&str> = seen.queued.iter().map(|q| q.id.as_str()).collect();
    let failed: Vec<&str> = seen.failed.iter().map(|f| f.entry.id.as_str()).collect();
    assert_eq!(queued, [b.id.as_str()], "not also waiting");
    assert_eq!(failed, [a.id.as_str()]);
    let rows = listed_rows(d.path());
    assert_eq!(rows.len(), 2, "one row each: {rows:?}");
    drop(claim);
}

#[test]
fn a_project_the_config_does_not_name_keeps_its_directory_in_the_file() {
    let d = tempfile::tempdir().unwrap();
    let q = enqueue_at(
        d.path(),
        "shop",
        Some(Path::new("/home/ana/shop")),
        "fix it",
        Priority::Normal,
        ("me", Some("gemini")),
    )
    .unwrap();
    let body: serde_json::Value = serde_json::from_slice(&std::fs::read(&q.path).unwrap()).unwrap();
    assert_eq!(body["project_path"], "/home/ana/shop");
    // The agent chosen for it is kept for whoever starts it.
    assert_eq!(body["agent"], "gemini");
    assert_eq!(list(d.path()).unwrap()[0].agent.as_deref(), Some("gemini"));
    let listed = list(d.path()).unwrap();
    assert_eq!(
        listed[0].project_path.as_deref(),
        Some(Path::new("/home/ana/shop"))
    );
    // A configured project's task has none, and no key for it.
    let plain = enqueue(d.path(), "musica", "x", Priority::Normal, "me").unwrap();
    let body = std::fs::read_to_string(&plain.path).unwrap();
    assert!(
        !body.contains("project_path") && !body.contains("agent"),
        "{body}"
    );
    assert_eq!(list(d.path()).unwrap()[1].project_path, None);
    assert_eq!(list(d.path()).unwrap()[1].agent, None);
}
