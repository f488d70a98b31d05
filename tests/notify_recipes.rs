//! The recipes docs/notifications.md gives (assets/notify/luzia-ntfy, -slack, -telegram), run
//! for real: `luzia notify --test` runs each as its `[notify] command`, with the real jq and
//! curl, against an HTTP listener on 127.0.0.1 standing for the service. The request must be
//! the one the service documents. Where jq or curl is missing, the tests say so loudly and pass
//! (CI installs both and sets LUZIA_REQUIRE_RECIPE_TOOLS=1, so there they fail instead).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may panic: that is how they fail

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;

/// One HTTP request as the listener saw it.
#[derive(Debug)]
struct Request {
    line: String,
    headers: Vec<String>,
    body: Value,
}

/// Listens on a free port, answers one request with 200 and hands it over.
fn listen() -> (u16, mpsc::Receiver<Request>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        let mut reader = BufReader::new(stream);
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        let mut headers = Vec::new();
        loop {
            let mut h = String::new();
            reader.read_line(&mut h).unwrap();
            if h.trim().is_empty() {
                break;
            }
            headers.push(h.trim().to_owned());
        }
        let len: usize = headers
            .iter()
            .find_map(|h| {
                let (k, v) = h.split_once(':')?;
                k.eq_ignore_ascii_case("content-length")
                    .then(|| v.trim().parse().ok())?
            })
            .unwrap_or(0);
        let mut body = vec![0; len];
        reader.read_exact(&mut body).unwrap();
        let mut stream = reader.into_inner();
        stream
            .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
            .unwrap();
        let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let _ = tx.send(Request {
            line: line.trim().to_owned(),
            headers,
            body,
        });
    });
    (port, rx)
}

fn tools_present() -> bool {
    let have = |t: &str| {
        Command::new(t)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if have("jq") && have("curl") {
        return true;
    }
    if std::env::var("LUZIA_REQUIRE_RECIPE_TOOLS").is_ok_and(|v| v == "1") {
        panic!("LUZIA_REQUIRE_RECIPE_TOOLS=1 but jq or curl is missing");
    }
    eprintln!(
        "\n{0}\nSKIPPED: jq and curl are needed to run the recipes\n{0}\n",
        "*".repeat(72)
    );
    false
}

fn recipe(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("assets/notify")
        .join(name)
}

/// `luzia notify --test` with the recipe `name` as the command and `env` set; returns the
/// request the listener received.
fn run_recipe(name: &str, env: &[(&str, String)], rx: &mpsc::Receiver<Request>) -> Request {
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "[notify]\ncommand = [{}]\ntimeout_seconds = 20\n",
            serde_json::to_string(recipe(name).to_str().unwrap()).unwrap()
        ),
    )
    .unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_luzia"));
    for var in common::LUZIA_VARS {
        cmd.env_remove(var);
    }
    cmd.env("XDG_STATE_HOME", tmp.path())
        .env("XDG_CONFIG_HOME", tmp.path())
        .env_remove("http_proxy")
        .env_remove("HTTP_PROXY")
        .env_remove("all_proxy")
        .env_remove("ALL_PROXY")
        .args(["--config", config.to_str().unwrap(), "notify", "--test"]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = assert_cmd::Command::from_std(cmd)
        .timeout(Duration::from_secs(40))
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{name}: {}{}",
        common::stdout_of(&out),
        common::stderr_of(&out)
    );
    rx.recv_timeout(Duration::from_secs(20))
        .unwrap_or_else(|_| panic!("{name} sent nothing"))
}

fn header<'a>(r: &'a Request, name: &str) -> Option<&'a str> {
    r.headers.iter().find_map(|h| {
        let (k, v) = h.split_once(':')?;
        k.eq_ignore_ascii_case(name).then_some(v.trim())
    })
}

#[test]
fn ntfy_gets_a_json_message_with_title_tag_priority_and_token() {
    if !tools_present() {
        return;
    }
    let (port, rx) = listen();
    let r = run_recipe(
        "luzia-ntfy",
        &[
            ("NTFY_TOPIC", "luzia-ops".into()),
            ("NTFY_URL", format!("http://127.0.0.1:{port}")),
            ("NTFY_TOKEN", "tk_secret".into()),
        ],
        &rx,
    );
    assert_eq!(r.line, "POST / HTTP/1.1");
    assert_eq!(header(&r, "authorization"), Some("Bearer tk_secret"));
    assert_eq!(header(&r, "content-type"), Some("application/json"));
    assert_eq!(r.body["topic"], "luzia-ops");
    assert_eq!(r.body["tags"], serde_json::json!(["test"]));
    assert_eq!(r.body["priority"], 3);
    assert!(r.body["title"].as_str().unwrap().contains("Which database"));
    assert!(r.body["message"].as_str().unwrap().contains("luzia answer"));
}

#[test]
fn slack_gets_escaped_text() {
    if !tools_present() {
        return;
    }
    let (port, rx) = listen();
    let r = run_recipe(
        "luzia-slack",
        &[(
            "SLACK_WEBHOOK_URL",
            format!("http://127.0.0.1:{port}/services/T0/B0/secret"),
        )],
        &rx,
    );
    assert_eq!(r.line, "POST /services/T0/B0/secret HTTP/1.1");
    let text = r.body["text"].as_str().unwrap();
    assert!(
        text.starts_with("*000000-test asks: Which database"),
        "{text}"
    );
    assert!(text.contains("Options: production / staging"), "{text}");
}

#[test]
fn telegram_gets_plain_text_for_the_chat() {
    if !tools_present() {
        return;
    }
    let (port, rx) = listen();
    let r = run_recipe(
        "luzia-telegram",
        &[
            ("TELEGRAM_BOT_TOKEN", "123:abc".into()),
            ("TELEGRAM_CHAT_ID", "-10042".into()),
            ("TELEGRAM_API", format!("http://127.0.0.1:{port}")),
        ],
        &rx,
    );
    assert_eq!(r.line, "POST /bot123:abc/sendMessage HTTP/1.1");
    assert_eq!(r.body["chat_id"], "-10042");
    assert!(r.body.get("parse_mode").is_none());
    let text = r.body["text"].as_str().unwrap();
    assert!(
        text.starts_with("000000-test asks:") && text.contains("\n\n"),
        "{text}"
    );
}

#[test]
fn slack_escapes_what_an_agent_could_use_to_mention_everyone() {
    if !tools_present() {
        return;
    }
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "printf '%s' '{{\"title\":\"<!channel> & co\",\"body\":\"<b>\"}}' | \
             SLACK_WEBHOOK_URL=x PATH=\"$PWD/fake:$PATH\" {}",
            recipe("luzia-slack").display()
        ))
        .current_dir(fake_curl_dir().path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", common::stderr_of(&out));
    let sent: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(sent["text"], "*&lt;!channel&gt; &amp; co*\n&lt;b&gt;");
}

/// A directory with `fake/curl`: prints what it would have sent (its stdin) and succeeds.
fn fake_curl_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("fake")).unwrap();
    let curl = dir.path().join("fake/curl");
    std::fs::write(&curl, "#!/bin/sh\ncat\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&curl, std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}
