use super::*;
use crate::jobs::run::dispatch::{Spec, create};
use chrono::Utc;

fn job(cmd: &[&str]) -> (tempfile::TempDir, PathBuf) {
    let root = tempfile::tempdir().unwrap();
    let spec = Spec {
        project: "p".into(),
        project_path: root.path().to_owned(),
        user: None,
        task: "say hello".into(),
        command: cmd.iter().map(|s| s.to_string()).collect(),
        prompt_template: "{task}".into(),
        retry_of: None,
        addendum: None,
        queue_id: None,
        permissions: Default::default(),
    };
    let c = create(root.path(), &spec, Utc::now()).unwrap();
    (root, c.dir)
}

#[test]
fn runs_the_agent_on_the_prompt_and_writes_the_exit_line() {
    let (root, dir) = job(&["sh", "-c", "cat; echo to-stderr >&2; exit 3"]);
    let notes = root.path().join("notifications.log");
    assert_eq!(supervise(&dir, Some(&notes)).unwrap(), 3);
    let log = std::fs::read_to_string(dir.join(LOG_FILE)).unwrap();
    assert!(log.starts_with("say hello"), "{log}");
    assert!(log.contains("to-stderr"));
    assert!(log.ends_with("\nexit:3\n"), "{log:?}");
    let meta: Value = serde_json::from_slice(&std::fs::read(dir.join(META_FILE)).unwrap()).unwrap();
    assert_eq!(meta["exit_code"], 3);
    assert!(meta["finished"].is_string());
    assert_eq!(meta["project"], "p", "other fields kept");
    let line = std::fs::read_to_string(notes).unwrap();
    assert!(line.contains("finished (exit 3)"), "{line}");
}

#[test]
fn a_missing_agent_is_exit_127_with_a_reason() {
    let (_root, dir) = job(&["/nonexistent/agent"]);
    assert_eq!(supervise(&dir, None).unwrap(), 127);
    let log = std::fs::read_to_string(dir.join(LOG_FILE)).unwrap();
    assert!(
        log.contains("cannot start the agent") && log.ends_with("exit:127\n"),
        "{log}"
    );
}

#[test]
fn a_requested_stop_is_recorded_whatever_the_exit_code() {
    // The request is on disk before the agent ends (as `luzia kill` publishes it before it
    // signals); the agent ends with 0 all the same.
    let (root, dir) = job(&["sh", "-c", "cat >/dev/null; exit 0"]);
    let at = chrono::TimeZone::with_ymd_and_hms(&Utc, 2026, 1, 11, 14, 31, 2).unwrap();
    let request = StopRequest::new("bruno@host", at, stop::StopSource::Tui);
    std::fs::write(
        dir.join(crate::jobs::fs::names::STOP_FILE),
        request.to_json(),
    )
    .unwrap();
    let notes = root.path().join("notifications.log");
    assert_eq!(supervise(&dir, Some(&notes)).unwrap(), 0);
    let meta: Value = serde_json::from_slice(&std::fs::read(dir.join(META_FILE)).unwrap()).unwrap();
    assert_eq!(meta["exit_code"], 0, "the agent's own code is kept");
    assert_eq!(meta["status"], "killed");
    assert_eq!(
        meta["stop"],
        serde_json::json!({"requested_by": "bruno@host",
            "requested_at": "2026-01-11T14:31:02Z", "source": "tui"})
    );
    let line = std::fs::read_to_string(notes).unwrap();
    assert!(
        line.ends_with(" finished (exit 0), killed by bruno@host (tui)\n"),
        "{line}"
    );
}

#[test]
fn without_a_request_meta_json_and_the_line_are_as_before() {
    let (root, dir) = job(&["sh", "-c", "cat >/dev/null; exit 0"]);
    let notes = root.path().join("notifications.log");
    assert_eq!(supervise(&dir, Some(&notes)).unwrap(), 0);
    let meta: Value = serde_json::from_slice(&std::fs::read(dir.join(META_FILE)).unwrap()).unwrap();
    assert_eq!(meta["status"], "running", "as dispatched: advisory");
    assert!(meta.get("stop").is_none());
    let line = std::fs::read_to_string(notes).unwrap();
    assert!(line.ends_with(" finished (exit 0)\n"), "{line}");
}

#[test]
fn a_signal_death_is_a_negative_exit() {
    let (_root, dir) = job(&["sh", "-c", "kill -9 $$"]);
    assert_eq!(supervise(&dir, None).unwrap(), -9);
}

#[test]
fn a_meta_json_the_agent_turned_into_a_link_is_not_followed() {
    // An agent running as another user owns its directory and could point meta.json at a
    // file only root can read: its content must not be copied into the job directory.
    let (root, dir) = job(&[
        "sh",
        "-c",
        r#"cat >/dev/null; ln -sf "$0" "$LUZIA_JOB_DIR/meta.json""#,
    ]);
    let secret = root.path().join("secret.json");
    std::fs::write(&secret, r#"{"token": "s3cr3t"}"#).unwrap();
    let meta = std::fs::read_to_string(dir.join(META_FILE)).unwrap();
    let agent: Vec<String> = serde_json::from_str::<Value>(&meta).unwrap()["argv"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .chain([secret.display().to_string()])
        .collect();
    let mut m: Value = serde_json::from_str(&meta).unwrap();
    m["argv"] = serde_json::json!(agent);
    std::fs::write(dir.join(META_FILE), m.to_string()).unwrap();
    assert_eq!(supervise(&dir, None).unwrap(), 0);
    assert!(
        std::fs::symlink_metadata(dir.join(META_FILE))
            .unwrap()
            .file_type()
            .is_symlink(),
        "rewritten through the link"
    );
    assert_eq!(
        std::fs::read_to_string(&secret).unwrap(),
        r#"{"token": "s3cr3t"}"#
    );
}
