//! Running `git`: always an argument vector (never a shell line), with `-C <dir>`, the C locale,
//! and none of the `GIT_*` variables that could point it at another repository, index or
//! object store inherited from whoever started luzia. A project with `user = ...` has git run as
//! that user, so that everything it writes into the repository (objects, refs, a worktree) is
//! the user's.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use super::ReviewError;
use crate::jobs::os::account::Account;

/// The identity luzia's own snapshot commits are written with, so that they never depend on
/// (or fail for the lack of) the user's `user.name`.
const IDENTITY: [(&str, &str); 4] = [
    ("GIT_AUTHOR_NAME", "luzia"),
    ("GIT_AUTHOR_EMAIL", "luzia@localhost"),
    ("GIT_COMMITTER_NAME", "luzia"),
    ("GIT_COMMITTER_EMAIL", "luzia@localhost"),
];

/// One repository (or worktree) directory and how git is run in it.
#[derive(Clone, Debug)]
pub struct Git {
    pub dir: PathBuf,
    pub user: Option<Account>,
    /// A private index (`GIT_INDEX_FILE`) instead of the repository's own.
    pub index: Option<PathBuf>,
    /// Commits are written as `luzia` (snapshots), not as the user (a merge commit).
    pub as_luzia: bool,
}

impl Git {
    pub fn new(dir: &Path, user: Option<&Account>) -> Git {
        Git {
            dir: dir.to_owned(),
            user: user.cloned(),
            index: None,
            as_luzia: true,
        }
    }

    /// The same, writing commits as the user configured in git (for a merge commit).
    pub fn as_user(&self) -> Git {
        Git {
            as_luzia: false,
            ..self.clone()
        }
    }

    pub fn with_index(&self, index: &Path) -> Git {
        Git {
            index: Some(index.to_owned()),
            ..self.clone()
        }
    }

    fn command<I, S>(&self, args: I) -> Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut cmd = Command::new("git");
        for (k, _) in std::env::vars_os() {
            if k.to_string_lossy().starts_with("GIT_") {
                cmd.env_remove(k);
            }
        }
        cmd.env("LC_ALL", "C")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_OPTIONAL_LOCKS", "0")
            .arg("-C")
            .arg(&self.dir)
            // Never a pager, an external diff driver or a text conversion: the bytes as stored.
            .args([
                "--no-pager",
                "-c",
                "core.quotepath=off",
                "-c",
                "color.ui=false",
            ])
            .args(args)
            .stdin(Stdio::null());
        if self.as_luzia {
            cmd.envs(IDENTITY);
        }
        if let Some(i) = &self.index {
            cmd.env("GIT_INDEX_FILE", i);
        }
        if let Some(u) = &self.user {
            cmd.env("HOME", &u.home);
            u.switch(&mut cmd);
        }
        cmd
    }

    /// Runs git; its stdout when it succeeds, else an error with what it said on stderr.
    pub fn run<I, S>(&self, args: I) -> Result<Vec<u8>, ReviewError>
    where
        I: IntoIterator<Item = S> + Clone,
        S: AsRef<OsStr>,
    {
        let out = self.output(args.clone())?;
        if out.status.success() {
            return Ok(out.stdout);
        }
        Err(self.failed(args, &out))
    }

    /// Runs git and reads its stdout until `enough` says how much of what was read is wanted
    /// (given all read so far); git is then stopped rather than left to compute the rest.
    /// Returns what was wanted and whether more was cut off.
    pub fn run_until<I, S>(
        &self,
        args: I,
        enough: impl Fn(&[u8]) -> Option<usize>,
    ) -> Result<(Vec<u8>, bool), ReviewError>
    where
        I: IntoIterator<Item = S> + Clone,
        S: AsRef<OsStr>,
    {
        use std::io::Read;
        let io = |source| ReviewError::Io {
            path: self.dir.clone(),
            source,
        };
        let mut child = self
            .command(args.clone())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound => ReviewError::NoGit,
                _ => io(e),
            })?;
        let mut out = Vec::new();
        let mut cut = None;
        if let Some(mut stdout) = child.stdout.take() {
            let mut chunk = vec![0u8; 256 * 1024];
            loop {
                let n = stdout.read(&mut chunk).map_err(io)?;
                if n == 0 {
                    break;
                }
                out.extend_from_slice(&chunk[..n]);
                if let Some(keep) = enough(&out) {
                    cut = Some(keep);
                    break;
                }
            }
        }
        if let Some(keep) = cut {
            out.truncate(keep);
            let _ = child.kill();
        }
        let done = child.wait_with_output().map_err(io)?;
        if cut.is_none() && !done.status.success() {
            return Err(self.failed(args, &done));
        }
        Ok((out, cut.is_some()))
    }

    /// Runs git and returns its whole output, whatever its exit status.
    pub fn output<I, S>(&self, args: I) -> Result<Output, ReviewError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.command(args).output().map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                ReviewError::NoGit
            } else {
                ReviewError::Io {
                    path: self.dir.clone(),
                    source: e,
                }
            }
        })
    }

    /// Runs git with `input` on its stdin; its whole output, whatever its exit status.
    pub fn output_with_input<I, S>(&self, args: I, input: &[u8]) -> Result<Output, ReviewError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        use std::io::Write;
        let io = |source| ReviewError::Io {
            path: self.dir.clone(),
            source,
        };
        let mut child = self
            .command(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound => ReviewError::NoGit,
                _ => io(e),
            })?;
        // Written from a thread of its own: git may fill its stdout before reading all of it.
        let mut stdin = child.stdin.take();
        let input = input.to_vec();
        let writer = std::thread::spawn(move || {
            if let Some(s) = stdin.as_mut() {
                let _ = s.write_all(&input);
            }
        });
        let out = child.wait_with_output().map_err(io)?;
        let _ = writer.join();
        Ok(out)
    }

    /// Like [`Git::run`], with the output as text and one trailing newline removed.
    pub fn text<I, S>(&self, args: I) -> Result<String, ReviewError>
    where
        I: IntoIterator<Item = S> + Clone,
        S: AsRef<OsStr>,
    {
        let mut s = String::from_utf8_lossy(&self.run(args)?).into_owned();
        if s.ends_with('\n') {
            s.pop();
        }
        Ok(s)
    }

    pub fn failed<I, S>(&self, args: I, out: &Output) -> ReviewError
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let args: Vec<String> = args
            .into_iter()
            .map(|a| a.as_ref().to_string_lossy().into_owned())
            .collect();
        let said = String::from_utf8_lossy(&out.stderr);
        ReviewError::Git {
            dir: self.dir.clone(),
            command: args.join(" "),
            said: said.trim().chars().take(2000).collect(),
        }
    }

    /// The commit `rev` names, or `None` when it names none (an unborn branch's HEAD).
    pub fn commit(&self, rev: &str) -> Result<Option<String>, ReviewError> {
        let spec = format!("{rev}^{{commit}}");
        let out = self.output(["rev-parse", "-q", "--verify", spec.as_str()])?;
        Ok(out
            .status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned()))
    }

    /// The commits `revs` name, in one git process when all exist (the common case), else one
    /// by one.
    pub fn commits(&self, revs: &[&str]) -> Result<Vec<Option<String>>, ReviewError> {
        let specs: Vec<String> = revs.iter().map(|r| format!("{r}^{{commit}}")).collect();
        let mut args = vec!["rev-parse".to_owned()];
        args.extend(specs.iter().cloned());
        let out = self.output(&args)?;
        let text = String::from_utf8_lossy(&out.stdout);
        let lines: Vec<&str> = text.lines().collect();
        if out.status.success() && lines.len() == revs.len() {
            return Ok(lines.into_iter().map(|l| Some(l.to_owned())).collect());
        }
        revs.iter().map(|r| self.commit(r)).collect()
    }

    /// The branch HEAD is on (`main`), or `None` for a detached HEAD.
    pub fn branch(&self) -> Result<Option<String>, ReviewError> {
        let out = self.output(["symbolic-ref", "-q", "--short", "HEAD"])?;
        Ok(out
            .status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned()))
    }

    /// The repository's git directory (a worktree's own, for a worktree), absolute.
    pub fn git_dir(&self) -> Result<PathBuf, ReviewError> {
        Ok(PathBuf::from(self.text([
            "rev-parse",
            "--path-format=absolute",
            "--git-dir",
        ])?))
    }
}

/// The top level of the git repository `dir` is in; `NotARepo` when it is in none.
pub fn toplevel(dir: &Path, user: Option<&Account>) -> Result<PathBuf, ReviewError> {
    let git = Git::new(dir, user);
    let out = git.output(["rev-parse", "--show-toplevel"])?;
    if !out.status.success() {
        return Err(ReviewError::NotARepo(dir.to_owned()));
    }
    let top = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    if top.is_empty() {
        // Inside a .git directory, or a bare repository: there is no working tree to review.
        return Err(ReviewError::NotARepo(dir.to_owned()));
    }
    Ok(PathBuf::from(top))
}
