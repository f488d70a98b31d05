//! The diff view (`d`): one job's change, read from git off the loop. A fixed header says which
//! job and what to know about its change; under it one scrollable page: the files changed, then
//! the unified diff, each line sanitized and styled only when it is on screen (`ui/diff.rs`).

use super::{App, Mode};
use crate::jobs::JobId;
use crate::jobs::model::review::{Change, Isolation};
use crate::jobs::text::width::width;
use crate::tui::action::{DiffAction, Key};
use crate::tui::effect::{Effect, ReviewOp};

/// Columns one press of a sideways key moves.
const SIDEWAYS: usize = 8;

/// A line of the patch: where it is, and whether it is part of a file's header (between
/// `diff --git` and the first `@@`), where `--- a/x` is a path and not a removed line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PatchLine {
    start: usize,
    end: usize,
    pub header: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct DiffView {
    pub job: JobId,
    /// The change, or why it could not be read; `None` while it is read.
    pub change: Option<Result<Change, String>>,
    /// Where each line of the patch is in it, found once when it arrives.
    pub lines: Vec<PatchLine>,
    /// The page row of each file's `diff --git` line, in order: what n/p jump between.
    pub file_rows: Vec<usize>,
    /// The first page row shown, and the columns scrolled sideways.
    pub scroll: usize,
    pub left: usize,
    /// The longest line of the patch, in bytes: how far sideways scrolling may go.
    widest: usize,
    /// The widest path of the list of files (a rename's both), in columns: where the counts go.
    pub path_cols: usize,
}

impl DiffView {
    pub fn loading(job: JobId) -> DiffView {
        DiffView {
            job,
            change: None,
            lines: Vec::new(),
            file_rows: Vec::new(),
            scroll: 0,
            left: 0,
            widest: 0,
            path_cols: 0,
        }
    }

    fn loaded(&mut self, change: Result<Change, String>) {
        self.lines.clear();
        self.file_rows.clear();
        if let Ok(c) = &change {
            self.path_cols = c
                .files
                .iter()
                .map(|f| f.from.as_ref().map_or(0, |from| width(from) + 3) + width(&f.path))
                .max()
                .unwrap_or(0);
            let (mut at, mut header) = (0, false);
            let first = c.files.len() + 2;
            for line in c.patch.split_inclusive('\n') {
                let text = line.trim_end_matches(['\n', '\r']);
                if text.starts_with("diff --git ") {
                    self.file_rows.push(first + self.lines.len());
                    header = true;
                } else if text.starts_with("@@") {
                    header = false;
                }
                self.widest = self.widest.max(text.len());
                self.lines.push(PatchLine {
                    start: at,
                    end: at + text.len(),
                    header,
                });
                at += line.len();
            }
        }
        self.change = Some(change);
        self.scroll = 0;
        self.left = 0;
    }

    /// The change, once read.
    pub fn change(&self) -> Option<&Change> {
        self.change.as_ref().and_then(|c| c.as_ref().ok())
    }

    /// The page row of the patch's first line: after a title, one row a file, and a blank row.
    pub fn patch_row(&self) -> usize {
        self.change().map_or(0, |c| c.files.len() + 2)
    }

    /// Rows of the page: the files, the patch, and a last row when the patch was cut.
    pub fn rows(&self) -> usize {
        match self.change() {
            None => 1,
            Some(c) => self.patch_row() + self.lines.len() + usize::from(c.truncated),
        }
    }

    /// The patch's line `i`, as git wrote it (not yet sanitized), and whether it is part of a
    /// file's header.
    pub fn patch_line(&self, i: usize) -> Option<(&str, bool)> {
        let line = *self.lines.get(i)?;
        let text = self.change()?.patch.get(line.start..line.end)?;
        Some((text, line.header))
    }

    /// The notes the header shows above the page (each takes a row).
    pub fn notes(&self) -> &[String] {
        self.change().map_or(&[], |c| c.notes.as_slice())
    }

    fn scroll_to(&mut self, row: usize, page: usize) {
        self.scroll = row.min(self.rows().saturating_sub(page));
    }

    pub(super) fn scroll_by(&mut self, delta: i64, page: usize) {
        let row = if delta < 0 {
            self.scroll.saturating_sub(delta.unsigned_abs() as usize)
        } else {
            self.scroll.saturating_add(delta as usize)
        };
        self.scroll_to(row, page);
    }

    /// The next (or previous) file's diff from the row on top.
    fn jump_file(&mut self, forward: bool, page: usize) {
        let target = if forward {
            self.file_rows.iter().find(|r| **r > self.scroll).copied()
        } else {
            self.file_rows
                .iter()
                .rev()
                .find(|r| **r < self.scroll)
                .copied()
        };
        match target {
            Some(row) => self.scroll_to(row, page),
            // Before the first file's diff: back to the list of files.
            None if !forward => self.scroll = 0,
            None => {}
        }
    }
}

/// Rows of the header above the page: the task, what the change is, and each note.
pub fn header_rows(view: &DiffView) -> usize {
    2 + view.notes().len()
}

impl App {
    /// Whether the job's change can be merged or discarded: only a worktree job's, on a branch
    /// of its own (a snapshot job's change is already in the project).
    pub fn merges(&self, id: &JobId) -> bool {
        self.jobs
            .get(id)
            .and_then(|j| j.meta.as_ref()?.review.as_ref())
            .is_some_and(|r| r.isolation == Isolation::Worktree)
    }

    /// Why merge and discard do nothing for the job (one that [`App::merges`] refuses).
    fn why_no_merge(&self, id: &JobId) -> String {
        let isolation = self
            .jobs
            .get(id)
            .and_then(|j| j.meta.as_ref()?.review.as_ref())
            .map(|r| r.isolation);
        match isolation {
            // Said as `luzia merge` says it.
            Some(Isolation::Snapshot) => {
                crate::jobs::review::ReviewError::NotWorktree(id.to_string()).to_string()
            }
            _ => format!("job {id} ran without isolation: there is no change to merge or discard"),
        }
    }

    pub(super) fn open_diff(&mut self) -> Vec<Effect> {
        let Some(job) = self.selected_job() else {
            return vec![];
        };
        if job.id.is_queued() {
            self.message = Some(format!(
                "{} is queued: it has changed nothing yet",
                job.shown_id()
            ));
            return vec![];
        }
        let id = job.id.clone();
        self.mode = Mode::Diff(DiffView::loading(id.clone()));
        vec![Effect::LoadChange(id)]
    }

    pub(super) fn on_change_loaded(&mut self, id: JobId, change: Result<Change, String>) {
        if let Mode::Diff(view) = &mut self.mode
            && view.job == id
        {
            view.loaded(change);
        }
    }

    /// The rows of the page on screen: the body less the border and the header.
    pub fn diff_page(&self, view: &DiffView) -> usize {
        let a = self.areas();
        let body = a.table.union(a.output).height as usize;
        body.saturating_sub(2 + header_rows(view)).max(1)
    }

    pub(super) fn on_diff_key(&mut self, key: &Key) -> Vec<Effect> {
        let Some(actions) = self.bound::<DiffAction>(key) else {
            return self.ask_quit(key);
        };
        let Mode::Diff(view) = &self.mode else {
            return vec![];
        };
        let page = self.diff_page(view);
        let merges = self.merges(&view.job);
        let Mode::Diff(view) = &mut self.mode else {
            return vec![];
        };
        use DiffAction as A;
        let Some(action) = actions.first() else {
            self.dirty = false;
            return vec![];
        };
        let page_step = i64::try_from(page.saturating_sub(1).max(1)).unwrap_or(i64::MAX);
        match action {
            A::Close => self.mode = Mode::Normal,
            A::Help => self.open_help(),
            A::Up => view.scroll_by(-1, page),
            A::Down => view.scroll_by(1, page),
            A::PageUp => view.scroll_by(-page_step, page),
            A::PageDown => view.scroll_by(page_step, page),
            A::Top => view.scroll = 0,
            A::Bottom => view.scroll_to(usize::MAX, page),
            A::NextFile => view.jump_file(true, page),
            A::PrevFile => view.jump_file(false, page),
            A::Left => view.left = view.left.saturating_sub(SIDEWAYS),
            A::Right => view.left = (view.left + SIDEWAYS).min(view.widest),
            A::Merge | A::Discard if !merges => {
                let id = view.job.clone();
                self.message = Some(self.why_no_merge(&id));
            }
            A::Merge | A::Discard => {
                let op = if *action == A::Merge {
                    ReviewOp::Merge
                } else {
                    ReviewOp::Discard
                };
                let id = view.job.clone();
                self.mode = Mode::Normal;
                return self.ask_review(&id, op);
            }
        }
        vec![]
    }
}
