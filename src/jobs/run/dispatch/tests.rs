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
        Err(DispatchError::NoProjectDir(_))
    ));
    assert!(
        std::fs::read_dir(root.path()).unwrap().next().is_none(),
        "nothing created on refusal"
    );
}
