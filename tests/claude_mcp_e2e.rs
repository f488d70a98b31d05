//! A person's own MCP servers beside luzia's, with the real Claude Code CLI against a scripted
//! fake Messages API. Servers from the agent command's `--mcp-config`, the project's
//! `.mcp.json` and the user's `~/.claude.json` are all kept, and a tool of one of them really
//! runs (with the command's own `--allowedTools` standing). A server named `luzia`, which
//! luzia's own `--mcp-config` would silently replace, is refused at `luzia run`, naming the
//! file, before any job exists.
//!
//! The person's server is a real MCP server: luzia's own (`luzia mcp --job-dir DIR`) under
//! another name, whose progress tool writes `DIR/progress.json`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use common::claude::{FakeApi, Reply, clis_or_skip, offers};
use serde_json::{Value, json};

/// Generous: the real CLI starts in a second or two, more on a loaded machine.
const WAIT: Duration = Duration::from_secs(90);

struct World {
    _tmp: tempfile::TempDir,
    base: PathBuf,
    claude_dir: Option<PathBuf>,
}

impl Drop for World {
    fn drop(&mut self) {
        common::kill_processes_mentioning(&self.base);
    }
}

impl World {
    /// A project `p`, a HOME of the agent's own, and a config whose agent command is the
    /// default one with `extra` words (TOML strings) after it.
    fn new(claude: Option<&Path>, api: &FakeApi, extra: &[&str]) -> World {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().to_owned();
        for d in [
            "jobs", "queue", "xdg", "home", "proj", "mine", "team", "personal",
        ] {
            fs::create_dir_all(base.join(d)).unwrap();
        }
        let q = |p: &Path| serde_json::to_string(p.to_str().unwrap()).unwrap();
        let mut command = vec![
            "\"claude\"",
            "\"--print\"",
            "\"--output-format\"",
            "\"stream-json\"",
            "\"--verbose\"",
        ];
        command.extend_from_slice(extra);
        let config = format!(
            "jobs_dir = {}\nnotifications_log = {}\nqueue_dir = {}\n\n[agent]\ncommand = [{}]\n\
             env = {}\n\n[projects.p]\npath = {}\n",
            q(&base.join("jobs")),
            q(&base.join("notes.log")),
            q(&base.join("queue")),
            command.join(", "),
            api.agent_env_toml(&base.join("home")),
            q(&base.join("proj")),
        );
        fs::write(base.join("config.toml"), config).unwrap();
        World {
            _tmp: tmp,
            claude_dir: claude.map(|c| c.parent().unwrap().to_owned()),
            base,
        }
    }

    fn luzia(&self, args: &[&str]) -> Output {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_luzia"));
        for var in common::LUZIA_VARS {
            cmd.env_remove(var);
        }
        let path = std::env::join_paths(
            self.claude_dir
                .iter()
                .cloned()
                .chain(std::env::split_paths(&std::env::var_os("PATH").unwrap())),
        )
        .unwrap();
        cmd.env("XDG_CONFIG_HOME", self.base.join("xdg"))
            .env("PATH", path)
            .env("NO_COLOR", "1")
            .arg("--config")
            .arg(self.base.join("config.toml"))
            .args(args)
            .output()
            .unwrap()
    }

    /// A `mcpServers` configuration with a server `name`: luzia's MCP server writing into
    /// the directory `dir` of the world.
    fn servers(&self, name: &str, dir: &str) -> Value {
        json!({"mcpServers": {name: {"type": "stdio",
            "command": env!("CARGO_BIN_EXE_luzia"),
            "args": ["mcp", "--job-dir", self.base.join(dir)]}}})
    }

    fn write(&self, path: &str, v: &Value) {
        fs::write(self.base.join(path), v.to_string()).unwrap();
    }

    fn jobs(&self) -> Vec<Value> {
        serde_json::from_slice(&self.luzia(&["jobs", "--json"]).stdout).unwrap()
    }

    fn log(&self, id: &str) -> String {
        fs::read_to_string(self.base.join("jobs").join(id).join("output.log")).unwrap_or_default()
    }
}

#[test]
fn a_users_own_mcp_servers_are_kept_beside_luzias_and_their_tools_run() {
    for claude in clis_or_skip("a_users_own_mcp_servers_are_kept_beside_luzias") {
        let api = FakeApi::start(vec![
            Reply::tool(
                "mcp__mine__progress",
                json!({"percent": 70, "step_name": "Reported to my own server"}),
            ),
            Reply::text("Reported."),
        ]);
        // The person's own flags, after luzia's default ones: a config file and a rule that
        // lets its tool run without asking.
        let extra = [
            "\"--mcp-config\"",
            "\"{project_path}/tools.json\"",
            "\"--allowedTools\"",
            "\"mcp__mine__progress\"",
        ];
        let w = World::new(Some(&claude), &api, &extra);
        w.write("proj/tools.json", &w.servers("mine", "mine"));
        w.write("proj/.mcp.json", &w.servers("team", "team"));
        w.write("home/.claude.json", &w.servers("personal", "personal"));

        let out = w.luzia(&["run", "p", "Report how far you are to my server."]);
        assert_eq!(out.status.code(), Some(0), "{}", common::stderr_of(&out));
        let id = w.jobs()[0]["id"].as_str().unwrap().to_owned();
        let luzia = |args: &[&str]| w.luzia(args);
        let job = common::claude::wait_finished(luzia, || w.log(&id), &id, WAIT);
        assert_eq!(job["status"], "completed", "{job}\n{}", w.log(&id));

        // Claude Code connected every server, the person's and luzia's.
        let stream = fs::read_to_string(w.base.join("jobs").join(&id).join("stream.jsonl"))
            .unwrap_or_default();
        let init: Value = stream
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|e| e["type"] == "system" && e["subtype"] == "init")
            .unwrap_or_else(|| panic!("no system/init in the stream:\n{stream}"));
        for name in ["luzia", "mine", "team", "personal"] {
            let server = init["mcp_servers"]
                .as_array()
                .unwrap()
                .iter()
                .find(|s| s["name"] == name);
            assert!(
                server.is_some_and(|s| s["status"] == "connected"),
                "server {name}: {}",
                init["mcp_servers"]
            );
        }
        let first = &api.requests()[0];
        for tool in [
            "mcp__luzia__progress",
            "mcp__mine__progress",
            "mcp__team__progress",
        ] {
            assert!(
                offers(first, tool),
                "{tool} is not offered: {}",
                first["tools"]
            );
        }
        // The person's tool ran, in the person's server, without asking anyone.
        let progress: Value =
            serde_json::from_slice(&fs::read(w.base.join("mine/progress.json")).unwrap()).unwrap();
        assert_eq!(progress["step_name"], "Reported to my own server");
        assert!(!w.base.join("jobs").join(&id).join("progress.json").exists());
    }
}

#[test]
fn a_server_named_luzia_is_refused_at_run_naming_its_file() {
    let api = FakeApi::start(Vec::new());
    let inline = r#""{\"mcpServers\":{\"luzia\":{\"command\":\"/bin/true\"}}}""#;
    // (extra words of the command, the file to write with a `luzia` server, what the error
    // names)
    let cases: [(&[&str], Option<&str>, &str); 4] = [
        (
            &["\"--mcp-config\"", "\"{project_path}/tools.json\""],
            Some("proj/tools.json"),
            "proj/tools.json",
        ),
        (
            &[],
            Some("proj/.mcp.json"),
            "proj/.mcp.json (project scope)",
        ),
        (
            &[],
            Some("home/.claude.json"),
            "home/.claude.json (user scope",
        ),
        (
            &["\"--mcp-config\"", inline],
            None,
            "the agent command's --mcp-config",
        ),
    ];
    for (extra, file, named) in cases {
        let w = World::new(None, &api, extra);
        if let Some(file) = file {
            w.write(file, &w.servers("luzia", "mine"));
        }
        for queued in [false, true] {
            let mut args = vec!["run", "p", "Work with my servers."];
            if queued {
                args.push("--queue");
            }
            let out = w.luzia(&args);
            let said = common::stderr_of(&out);
            assert_eq!(out.status.code(), Some(1), "{args:?} {file:?}: {said}");
            let named = if named.starts_with("the ") {
                named.to_owned()
            } else {
                w.base.join(named).display().to_string()
            };
            assert!(said.contains(&named), "{file:?} is not named: {said}");
            assert!(
                said.contains("MCP server named \"luzia\"") && said.contains("Rename"),
                "{said}"
            );
            assert_eq!(w.jobs(), Vec::<Value>::new(), "no job was made: {said}");
            let queue = w.luzia(&["queue"]);
            assert!(
                !common::stdout_of(&queue).contains("Work with my servers"),
                "nothing was queued: {}",
                common::stdout_of(&queue)
            );
        }
    }
}
