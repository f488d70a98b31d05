use super::*;

#[test]
fn fill_is_one_pass() {
    let v = [("task", "use {job_dir} and {task}"), ("job_dir", "/j")];
    assert_eq!(
        fill("do: {task} in {job_dir} {unknown} {", &v),
        "do: use {job_dir} and {task} in /j {unknown} {"
    );
}

#[test]
fn quoting_survives_a_shell() {
    for s in ["plain", "it's", "$(touch x)", "`x`", "a\nb", "\\", "'"] {
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("printf %s {}", shell_quote(s)))
            .output()
            .unwrap();
        assert_eq!(out.stdout, s.as_bytes(), "{s:?}");
    }
}

fn spec(root: &Path) -> Spec {
    Spec {
        project: "musica".into(),
        project_path: root.to_owned(),
        user: None,
        task: "Run $(touch PWNED) `tests`; echo hi\n{job_dir}".into(),
        command: vec!["cat".into(), "--".into(), "{project}".into()],
        prompt_template: "Project {project} at {project_path}.\n\n{task}\n".into(),
        retry_of: None,
        addendum: None,
        queue_id: None,
        session: SessionPlan::default(),
        permissions: Permissions::default(),
        isolation: None,
        claude_dirs: Default::default(),
        steps: Default::default(),
    }
}

#[test]
fn a_claude_job_is_given_its_session_id_at_dispatch() {
    let root = tempfile::tempdir().unwrap();
    let s = Spec {
        command: vec!["/usr/local/bin/claude".into(), "-p".into()],
        ..spec(root.path())
    };
    let c = create(root.path(), &s, Utc::now()).unwrap();
    let meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(c.dir.join(META_FILE)).unwrap()).unwrap();
    let id = meta["session_id"].as_str().unwrap();
    let mcp = c.dir.join(MCP_CONFIG_FILE).display().to_string();
    assert_eq!(
        meta["argv"],
        json!([
            "/usr/local/bin/claude",
            "--session-id",
            id,
            "-p",
            "--permission-mode",
            "default",
            "--allowedTools",
            "mcp__luzia__progress",
            "--mcp-config",
            mcp,
            "--permission-prompt-tool",
            "mcp__luzia__permission"
        ])
    );
    let run = std::fs::read_to_string(c.dir.join(RUN_SCRIPT)).unwrap();
    assert!(run.contains(&format!("'--session-id' '{id}'")), "{run}");
    let plain = create(root.path(), &spec(root.path()), Utc::now()).unwrap();
    let meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(plain.dir.join(META_FILE)).unwrap()).unwrap();
    assert!(meta.get("session_id").is_none(), "not a Claude job: {meta}");
}

#[test]
fn creates_the_files_and_keeps_the_task_off_command_lines() {
    let root = tempfile::tempdir().unwrap();
    let c = create(root.path(), &spec(root.path()), Utc::now()).unwrap();
    let prompt = std::fs::read_to_string(c.dir.join(PROMPT_FILE)).unwrap();
    assert!(
        prompt.contains("Run $(touch PWNED) `tests`; echo hi\n{job_dir}"),
        "{prompt}"
    );
    let meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(c.dir.join(META_FILE)).unwrap()).unwrap();
    assert_eq!(meta["argv"], json!(["cat", "--", "musica"]));
    let run = std::fs::read_to_string(c.dir.join(RUN_SCRIPT)).unwrap();
    assert!(!run.contains("PWNED"), "{run}");
    assert!(!root.path().join("PWNED").exists());
    let other = create(root.path(), &spec(root.path()), Utc::now()).unwrap();
    assert_ne!(other.id, c.id, "a fresh id every time");
}

#[test]
fn refusals() {
    let root = tempfile::tempdir().unwrap();
    for bad in ["../x", "a/b", "", &"p".repeat(300)] {
        let s = Spec {
            project: bad.into(),
            ..spec(root.path())
        };
        assert!(
            matches!(
                create(root.path(), &s, Utc::now()),
                Err(DispatchError::BadProject(_))
            ),
            "{bad:?}"
        );
    }
    let s = Spec {
        task: "  \n".into(),
        ..spec(root.path())
    };
    assert!(matches!(
        create(root.path(), &s, Utc::now()),
        Err(DispatchError::EmptyTask)
    ));
    let s = Spec {
        project_path: root.path().join("nope"),
        ..spec(root.path())
    };
    assert!(matches!(
        create(root.path(), &s, Utc::now()),
        Err(DispatchError::NoProjectDir(..))
    ));
    assert!(
        std::fs::read_dir(root.path()).unwrap().next().is_none(),
        "nothing created on refusal"
    );
}

/// Waits for `check` with a hang guard (nothing here is timed).
fn wait_until(what: &str, check: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !check() {
        assert!(
            std::time::Instant::now() < deadline,
            "still waiting for {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// The slot reaches the supervisor, and only it: children another thread starts at the same
/// moment (the cockpit starts ssh masters that live for hours) never inherit it, so the slot is
/// free as soon as the supervisor is gone.
#[test]
fn the_slot_reaches_the_supervisor_and_no_child_spawned_beside_it() {
    use crate::jobs::run::queue::Slots;
    use crate::jobs::run::slots::{Entry, RUNNING_DIR, live};
    let tmp = tempfile::tempdir().unwrap();
    let (root, queue) = (tmp.path().join("jobs"), tmp.path().join("queue"));
    std::fs::create_dir(&root).unwrap();
    // A stand-in supervisor: says what its slot descriptor is open on, and ends.
    // Written by a child of its own: written here, a copy of the write descriptor would go
    // with any child another test's thread forks meanwhile, and exec would fail (ETXTBSY)
    // until that child execs.
    let exe = tmp.path().join("supervise.sh");
    let wrote = std::process::Command::new("sh")
        .args(["-c", "printf '%s\\n' \"$1\" > \"$0\" && chmod 755 \"$0\""])
        .arg(&exe)
        .arg("#!/bin/sh\nreadlink /proc/$$/fd/$5 > \"$6/slot.tmp\" && mv \"$6/slot.tmp\" \"$6/slot\"")
        .status()
        .unwrap();
    assert!(wrote.success());
    let slots = Slots::lock(&queue).unwrap();
    let mut spawner = Spawner::start();
    let ids: Vec<String> = (0..20).map(|i| format!("100000-{i:04x}")).collect();
    for id in &ids {
        let dir = root.join(id);
        std::fs::create_dir(&dir).unwrap();
        let entry = Entry::take(id, &slots).unwrap();
        start_supervisor(&exe, &dir, None, &root, Some(entry.fd())).unwrap();
    }
    spawner.stop_starting();
    for id in &ids {
        let slot = root.join(id).join("slot");
        wait_until(&format!("{id}'s supervisor"), || slot.exists());
        let got = std::fs::read_to_string(&slot).unwrap();
        assert_eq!(
            got.trim_end(),
            queue.join(RUNNING_DIR).join(id).to_str().unwrap()
        );
    }
    let held = || live(&slots).unwrap();
    // With the children started beside the supervisors still alive.
    wait_until("every slot to be free", || held().is_empty());
    drop(spawner);
}

/// A thread starting long-lived children one after another, until dropped; the children are
/// killed at the end of the test, however it ends.
struct Spawner {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    children: std::sync::Arc<std::sync::Mutex<Vec<std::process::Child>>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Spawner {
    fn start() -> Spawner {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let children = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let thread = {
            let (stop, children) = (stop.clone(), children.clone());
            std::thread::spawn(move || {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let child = std::process::Command::new("sleep")
                        .arg("600")
                        .stdin(Stdio::null())
                        .spawn();
                    children.lock().unwrap().extend(child.ok());
                }
            })
        };
        Spawner {
            stop,
            children,
            thread: Some(thread),
        }
    }

    fn stop_starting(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Spawner {
    fn drop(&mut self) {
        self.stop_starting();
        if let Ok(mut children) = self.children.lock() {
            for c in children.iter_mut() {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
    }
}
