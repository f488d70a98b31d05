use super::*;

use std::fs;

use serde_json::json;

fn argv(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| w.to_string()).collect()
}

fn servers(names: &[&str]) -> Value {
    let each = names.iter().map(|n| {
        (
            n.to_string(),
            json!({"type": "stdio", "command": "/bin/true"}),
        )
    });
    json!({"mcpServers": serde_json::Map::from_iter(each)})
}

fn write(path: &Path, v: &Value) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, v.to_string()).unwrap();
}

/// A home and a project two levels below a directory with its own `.mcp.json` possible.
struct Place {
    _tmp: tempfile::TempDir,
    top: PathBuf,
    cwd: PathBuf,
    dirs: ClaudeDirs,
}

fn place() -> Place {
    let tmp = tempfile::tempdir().unwrap();
    let top = tmp.path().join("srv");
    let cwd = top.join("repo/sub");
    fs::create_dir_all(&cwd).unwrap();
    let home = tmp.path().join("home");
    fs::create_dir_all(&home).unwrap();
    Place {
        top,
        cwd,
        dirs: ClaudeDirs {
            home: Some(home),
            config_dir: None,
        },
        _tmp: tmp,
    }
}

fn claude_at(p: &Place, words: &[&str]) -> Result<(), Clash> {
    clash(&argv(words), &p.cwd, &p.dirs)
}

#[test]
fn other_servers_anywhere_are_no_clash() {
    let p = place();
    write(&p.cwd.join("mine.json"), &servers(&["mine", "luzia-own"]));
    write(&p.top.join(".mcp.json"), &servers(&["project"]));
    let home = p.dirs.home.clone().unwrap();
    let user = json!({"mcpServers": {"usr": {}}, "projects": {p.cwd.to_str().unwrap():
        {"mcpServers": {"loc": {}}}}});
    write(&home.join(".claude.json"), &user);
    assert_eq!(
        claude_at(
            &p,
            &[
                "claude",
                "-p",
                "--mcp-config",
                "mine.json",
                "{\"mcpServers\":{}}"
            ]
        ),
        Ok(())
    );
    assert_eq!(claude_at(&p, &["claude"]), Ok(()));
}

#[test]
fn a_luzia_server_in_an_mcp_config_of_the_command_is_named_with_its_file() {
    let p = place();
    write(&p.cwd.join("b.json"), &servers(&["mine", "luzia"]));
    write(&p.cwd.join("a.json"), &servers(&["mine"]));
    for words in [
        &["claude", "--mcp-config", "a.json", "b.json", "-p"][..],
        &["claude", "--mcp-config=b.json"],
        &[
            "claude",
            "--mcp-config",
            "a.json",
            "--verbose",
            "--mcp-config",
            "b.json",
        ],
    ] {
        let err = claude_at(&p, words).unwrap_err();
        let file = p.cwd.join("b.json");
        assert_eq!(err.place, file.display().to_string(), "{words:?}");
        let said = err.to_string();
        assert!(said.contains("named \"luzia\""), "{said}");
        assert!(
            said.contains(&format!("Rename that server in {}", file.display())),
            "{said}"
        );
    }
    // A value after another option is that option's, not a config.
    assert_eq!(
        claude_at(
            &p,
            &["claude", "--mcp-config", "a.json", "--add-dir", "b.json"]
        ),
        Ok(())
    );
    let inline = r#"{"mcpServers":{"luzia":{"command":"x"}}}"#;
    let err = claude_at(&p, &["claude", "--mcp-config", inline]).unwrap_err();
    assert!(err.place.contains("--mcp-config '{\"mcpServers\""), "{err}");
    assert!(err.to_string().contains("[agent] command"), "{err}");
}

#[test]
fn a_luzia_server_of_the_project_or_the_user_is_found_where_claude_code_reads_it() {
    let p = place();
    let mcp = p.top.join(".mcp.json");
    write(&mcp, &servers(&["luzia"]));
    let err = claude_at(&p, &["claude", "-p"]).unwrap_err();
    assert_eq!(err.place, format!("{} (project scope)", mcp.display()));
    // Only the command line's servers count then.
    assert_eq!(claude_at(&p, &["claude", "--strict-mcp-config"]), Ok(()));
    fs::remove_file(&mcp).unwrap();

    let home = p.dirs.home.clone().unwrap();
    let user = home.join(".claude.json");
    write(&user, &servers(&["luzia"]));
    let err = claude_at(&p, &["claude"]).unwrap_err();
    assert!(err.place.starts_with(&user.display().to_string()), "{err}");
    assert!(err.to_string().contains("-s user"), "{err}");

    let repo = p.cwd.parent().unwrap();
    let local = json!({"projects": {
        p.top.join("elsewhere").to_str().unwrap(): servers(&["luzia"]),
        repo.to_str().unwrap(): servers(&["luzia"])}});
    write(&user, &local);
    let err = claude_at(&p, &["claude"]).unwrap_err();
    assert_eq!(
        err.place,
        format!("{} (local scope, for {})", user.display(), repo.display())
    );

    // CLAUDE_CONFIG_DIR holds the file instead of HOME.
    let moved = home.join("cfg");
    let dirs = ClaudeDirs {
        home: Some(home.clone()),
        config_dir: Some(moved.clone()),
    };
    assert_eq!(clash(&argv(&["claude"]), &p.cwd, &dirs), Ok(()));
    write(&moved.join(".claude.json"), &servers(&["luzia"]));
    assert!(clash(&argv(&["claude"]), &p.cwd, &dirs).is_err());
}

#[test]
fn unreadable_or_broken_files_are_left_to_claude_code() {
    let p = place();
    fs::write(p.cwd.join(".mcp.json"), "{ not json").unwrap();
    fs::create_dir_all(p.cwd.join("dir.json")).unwrap();
    let words = [
        "claude",
        "--mcp-config",
        "missing.json",
        "dir.json",
        "{broken",
    ];
    assert_eq!(claude_at(&p, &words), Ok(()));
}
