//! The repository a person stands in, as a project: `luzia run "task"` inside a git work tree
//! runs there with no config at all. A configured project whose path is that repository is
//! used under its configured name; any other is named after the repository's directory.

use std::path::{Path, PathBuf};

use super::{Config, Project};

/// The project a directory belongs to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Here {
    pub name: String,
    /// The repository's top level.
    pub path: PathBuf,
    /// Whether the config names it (then its settings apply); else it runs with the defaults.
    pub configured: bool,
}

/// Why no project could be found for a directory; each says what to do instead.
#[derive(Debug, thiserror::Error)]
pub enum NotHere {
    #[error(
        "{dir} is not inside a git repository, and no project was named: `cd` into a git \
         repository and run `luzia run \"task\"` there, name one with `luzia run -C DIR \"task\"`, \
         or configure projects with `luzia init` (then `luzia run PROJECT \"task\"`)"
    )]
    NoRepository { dir: PathBuf },
    #[error(
        "this repository ({path}) would be the project '{name}', but the config file {file} has \
         a project '{name}' at {other}: add this repository there under another name \
         ([projects.NAME] path = \"{path}\") and run `luzia run --project NAME \"task\"`"
    )]
    NameTaken {
        name: String,
        path: PathBuf,
        other: PathBuf,
        file: String,
    },
}

/// The top of the git work tree holding `dir`: the nearest directory, walking up, with a `.git`
/// (a directory, or the file a linked worktree or a submodule has).
pub fn repository_top(dir: &Path) -> Option<PathBuf> {
    let dir = dir.canonicalize().ok()?;
    dir.ancestors()
        .find(|d| d.join(".git").symlink_metadata().is_ok())
        .map(Path::to_path_buf)
}

/// A project name made of a directory's name: the characters a project name may not hold
/// become `-`.
pub fn name_for(top: &Path) -> String {
    let raw = top
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut name: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .collect();
    if !name.starts_with(|c: char| c.is_ascii_alphanumeric()) {
        name.insert_str(0, "repo");
    }
    name.truncate(128);
    name
}

impl Config {
    /// The project `dir` stands in: the configured one whose path is its repository's top
    /// level, else one named after that directory.
    pub fn project_here(&self, dir: &Path) -> Result<Here, NotHere> {
        let Some(top) = repository_top(dir) else {
            // Not a git repository: a configured project may still hold it.
            return self
                .configured_holding(dir)
                .ok_or_else(|| NotHere::NoRepository {
                    dir: dir.to_owned(),
                });
        };
        let same = |p: &Project| p.path.canonicalize().is_ok_and(|c| c == top);
        if let Some((name, _)) = self.projects.iter().find(|(_, p)| same(p)) {
            return Ok(Here {
                name: name.clone(),
                path: top,
                configured: true,
            });
        }
        let name = name_for(&top);
        if let Some(other) = self.projects.get(&name) {
            return Err(NotHere::NameTaken {
                name,
                path: top,
                other: other.path.clone(),
                file: self.file_to_edit(),
            });
        }
        Ok(Here {
            name,
            path: top,
            configured: false,
        })
    }
}

impl Config {
    /// The configured project whose directory holds `dir` (the deepest, when several do).
    fn configured_holding(&self, dir: &Path) -> Option<Here> {
        let dir = dir.canonicalize().ok()?;
        self.projects
            .iter()
            .filter(|(_, p)| !p.unconfigured)
            .filter_map(|(name, p)| Some((name, p.path.canonicalize().ok()?)))
            .filter(|(_, path)| dir.starts_with(path))
            .max_by_key(|(_, path)| path.components().count())
            .map(|(name, path)| Here {
                name: name.clone(),
                path,
                configured: true,
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_top_is_the_nearest_directory_with_a_git_entry() {
        let d = tempfile::tempdir().unwrap();
        let repo = d.path().join("my app");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(repo.join("src/deep")).unwrap();
        // A linked worktree's `.git` is a file.
        let linked = d.path().join("linked");
        std::fs::create_dir_all(linked.join("sub")).unwrap();
        std::fs::write(linked.join(".git"), "gitdir: /elsewhere\n").unwrap();
        let top = repo.canonicalize().unwrap();
        assert_eq!(repository_top(&repo.join("src/deep")), Some(top.clone()));
        assert_eq!(repository_top(&repo), Some(top));
        assert_eq!(
            repository_top(&linked.join("sub")),
            Some(linked.canonicalize().unwrap())
        );
        let outside = d.path().join("plain");
        std::fs::create_dir_all(&outside).unwrap();
        // The temporary directory may itself be in a repository; only assert when it is not.
        if repository_top(d.path()).is_none() {
            assert_eq!(repository_top(&outside), None);
        }
    }

    #[test]
    fn names_are_made_of_the_directory_name() {
        for (dir, name) in [
            ("/src/luzia", "luzia"),
            ("/src/my app", "my-app"),
            ("/src/.dotted", "repo.dotted"),
            ("/src/café", "caf-"),
            ("/", "repo"),
        ] {
            assert_eq!(name_for(Path::new(dir)), name, "{dir}");
            assert!(crate::jobs::model::id::is_valid(&name_for(Path::new(dir))));
        }
    }
}
