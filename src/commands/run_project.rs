//! Which project `luzia run` means. One word (a quoted task) runs in the git repository the
//! person stands in, or the one `-C DIR` names; several words are a configured project and its
//! task, as they have always been; `--project P` names the project outright. So a mistyped
//! project name is refused rather than run as a task here.

use std::path::Path;

use anyhow::{Result, bail};

use crate::cli::RunArgs;
use crate::config::Config;
use crate::dispatcher::Request;

/// The request `args` make, `cwd` being where luzia was started (`None` when it cannot be
/// told).
pub fn request(cfg: &Config, args: &RunArgs, cwd: Option<&Path>) -> Result<Request> {
    let words = &args.words;
    if let Some(project) = &args.project {
        return Ok(Request::new(project, &words.join(" ")));
    }
    if let Some(dir) = &args.dir {
        if !dir.is_dir() {
            bail!(
                "-C {}: no such directory (name a directory inside a git repository)",
                dir.display()
            );
        }
        return here(cfg, dir, &words.join(" "));
    }
    match words.as_slice() {
        [project, task @ ..] if !task.is_empty() => Ok(Request::new(project, &task.join(" "))),
        [only] if cfg.projects.contains_key(only) => bail!(
            "'{}' is a configured project: say what the agent should do (`luzia run {} \"task\"`)",
            only.escape_debug(),
            only.escape_debug()
        ),
        [task] => match cwd {
            Some(dir) => here(cfg, dir, task),
            None => bail!(
                "cannot tell the current directory: name the repository with `luzia run -C DIR \"task\"`"
            ),
        },
        _ => bail!("the task is empty: say what the agent should do"),
    }
}

/// A task for the project `dir` stands in.
fn here(cfg: &Config, dir: &Path, task: &str) -> Result<Request> {
    let here = cfg.project_here(dir)?;
    Ok(Request::here(&here, task))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn args(line: &[&str]) -> RunArgs {
        let cli = crate::cli::Cli::try_parse_from([&["luzia", "run"], line].concat()).unwrap();
        match cli.command {
            crate::cli::Command::Run(a) => a,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn one_word_is_a_task_here_and_several_start_with_a_project() {
        let d = tempfile::tempdir().unwrap();
        let repo = d.path().join("shop");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(repo.join("web")).unwrap();
        let other = d.path().join("other");
        std::fs::create_dir_all(&other).unwrap();
        let body = format!("[projects.musica]\npath = \"{}\"\n", other.display());
        let file = d.path().join("c.toml");
        std::fs::write(&file, body).unwrap();
        let ov = crate::config::Overrides {
            config: Some(file),
            jobs_dir: Some(d.path().join("jobs")),
        };
        let cfg = Config::load_with(&ov, &|_| None).unwrap();
        let top = repo.canonicalize().unwrap();
        let other_top = other.canonicalize().unwrap();
        let web = repo.join("web");
        let cases: &[(
            &[&str],
            Option<&Path>,
            Result<(&str, &str, Option<&Path>), &str>,
        )] = &[
            (&["fix it"], Some(&web), Ok(("shop", "fix it", Some(&top)))),
            (
                &["musica", "fix", "it"],
                Some(&web),
                Ok(("musica", "fix it", None)),
            ),
            (
                &["-C", web.to_str().unwrap(), "musica", "x"],
                None,
                Ok(("shop", "musica x", Some(&top))),
            ),
            (
                &["--project", "musica", "fix it"],
                None,
                Ok(("musica", "fix it", None)),
            ),
            // A mistyped project stays a project, refused later with the known ones.
            (
                &["musicaa", "fix"],
                Some(&web),
                Ok(("musicaa", "fix", None)),
            ),
            (&["musica"], Some(&web), Err("is a configured project")),
            // Not a repository, but a configured project's directory: that project.
            (
                &["fix it"],
                Some(&other),
                Ok(("musica", "fix it", Some(&other_top))),
            ),
            (
                &["fix it"],
                Some(d.path()),
                Err("is not inside a git repository"),
            ),
            (&["fix it"], None, Err("-C DIR")),
            (
                &["-C", "/no/such/dir", "fix"],
                None,
                Err("no such directory"),
            ),
        ];
        for (line, cwd, want) in cases {
            let got = request(&cfg, &args(line), *cwd);
            match (want, got) {
                (Ok((project, task, path)), Ok(req)) => {
                    assert_eq!(
                        (req.project.as_str(), req.task.as_str(), req.path.as_deref()),
                        (*project, *task, *path),
                        "{line:?}"
                    );
                }
                (Err(says), Err(e)) => {
                    assert!(e.to_string().contains(says), "{line:?}: {e}")
                }
                (want, got) => panic!("{line:?}: want {want:?}, got {got:?}"),
            }
        }
    }
}
