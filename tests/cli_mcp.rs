//! `luzia mcp` as Claude Code runs it: a process speaking JSON-RPC on its stdin and stdout. While
//! a permission request waits for the operator it still answers `ping`; when its client goes
//! away (stdin closed) or it is signalled (SIGTERM), the pending gate is withdrawn, so nothing
//! is left pending for a session that is gone.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use common::ChildGuard;
use serde_json::{Value, json};

struct Mcp {
    child: ChildGuard,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl Mcp {
    fn start(dir: &Path) -> Mcp {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_luzia"));
        for var in common::LUZIA_VARS {
            cmd.env_remove(var);
        }
        let mut child = cmd
            .args(["mcp", "--job-dir"])
            .arg(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Mcp {
            child: ChildGuard::new(child),
            stdin,
            stdout,
        }
    }

    fn send(&mut self, message: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(format!("{message}\n").as_bytes()).unwrap();
        stdin.flush().unwrap();
    }

    fn recv(&mut self) -> Value {
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"))
    }
}

fn job_dir(tmp: &Path) -> std::path::PathBuf {
    let dir = tmp.join("j1");
    fs::create_dir(&dir).unwrap();
    fs::write(dir.join("meta.json"), r#"{"project": "p", "task": "t"}"#).unwrap();
    dir
}

fn wait_until(what: &str, cond: impl Fn() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < common::HANG_GUARD, "waited for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Starts the server, asks permission for a Bash call, and checks `ping` is answered while the
/// gate waits.
fn waiting_at_a_gate(dir: &Path) -> Mcp {
    let mut mcp = Mcp::start(dir);
    mcp.send(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#);
    assert_eq!(mcp.recv()["result"]["serverInfo"]["name"], "luzia");
    mcp.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "permission",
        "arguments": {"tool_name": "Bash", "input": {"command": "make deploy"}, "tool_use_id": "t1"}}});
    mcp.send(&call.to_string());
    wait_until("the gate", || dir.join("approval.json").exists());
    mcp.send("this is not JSON");
    assert_eq!(mcp.recv()["error"]["code"], -32700);
    mcp.send(r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#);
    assert_eq!(mcp.recv(), json!({"jsonrpc": "2.0", "id": 3, "result": {}}));
    mcp
}

fn withdrawn(dir: &Path) -> bool {
    let history = fs::read_to_string(dir.join("history.jsonl")).unwrap_or_default();
    !dir.join("approval.json").exists()
        && history.contains("\"withdrawn\"")
        && history.contains("make deploy")
}

#[test]
fn the_gate_is_withdrawn_when_the_client_closes_its_end() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = job_dir(tmp.path());
    let mut mcp = waiting_at_a_gate(&dir);
    drop(mcp.stdin.take());
    let status = mcp
        .child
        .wait_within(common::HANG_GUARD, "luzia mcp after its stdin closed");
    assert_eq!(status.code(), Some(0));
    assert!(withdrawn(&dir), "{:?}", fs::read_dir(&dir).unwrap().count());
}

#[test]
fn the_gate_is_withdrawn_when_the_server_is_terminated() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = job_dir(tmp.path());
    let mut mcp = waiting_at_a_gate(&dir);
    let pid = rustix::process::Pid::from_raw(mcp.child.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let status = mcp
        .child
        .wait_within(common::HANG_GUARD, "luzia mcp after SIGTERM");
    assert_eq!(status.code(), Some(143));
    assert!(withdrawn(&dir));
}
