//! How wide each column of the jobs table is: sized by what the jobs listed hold (an empty column
//! takes no room, an almost empty one little where room is short), ids cut to their shortest unique prefix, statuses as symbols where narrow, and
//! the task given what is left. Every job the table lists counts, on screen or not, so that
//! scrolling never moves the columns.

use super::cells::{
    agent_of, alert_width, changes_label, changes_of, checks_label, cost_of, status_label,
};
use crate::jobs::model::session::format_cost;
use crate::jobs::run::agents::Kind;
use crate::jobs::text::sanitize::plain_text;
use crate::jobs::text::width::width;
use crate::jobs::{Job, Status};
use crate::tui::app::App;
use crate::tui::theme::Theme;
use crate::tui::ui::hosts::{host_label, id_str};

/// From this many columns inside the border, statuses are words and ids whole.
pub const WIDE: u16 = 100;
/// The cost column is shown only where the task keeps this many columns beside it.
const TASK_WITH_COST: u16 = 30;
/// The host column is dropped where the task would keep fewer columns than this beside it.
const TASK_WITH_HOST: u16 = 12;
/// Below [`WIDE`], a column with something in fewer than one listed job in this many is almost
/// empty: it keeps [`SPARSE_WIDTH`] columns (enough for its mark or figures, cut with an
/// ellipsis) and gives the rest to the task.
const SPARSE_ONE_IN: usize = 4;
const SPARSE_WIDTH: u16 = 6;
/// The widest a host's name is shown in its column (cut with an ellipsis beyond).
const HOST_WIDE: u16 = 12;
const HOST_NARROW: u16 = 6;

/// The widths of the columns, 0 for a column not shown; the task takes what is left.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Columns {
    pub status: u16,
    /// Statuses are words (else symbols, with a legend in the help).
    pub words: bool,
    /// Which host the job is on (only where remote hosts are shown; the first to go).
    pub host: u16,
    pub id: u16,
    pub project: u16,
    /// The kind of agent (`claude`, `codex`): only where the jobs listed ran more than one.
    pub agent: u16,
    pub progress: u16,
    pub elapsed: u16,
    pub cost: u16,
    pub alert: u16,
    /// What the job changed in its project (`+120 -8 · 5 files`, `+120-8` where narrow).
    pub changes: u16,
    pub changes_short: bool,
    /// How the project's checks went (`✓ 3/3`, `✗ 1/3`, `… 2/3`).
    pub checks: u16,
    pub task: u16,
    /// How many bytes of each id are shown (its shortest unique prefix), by its row in the
    /// list the columns were fitted to; empty where ids are whole. Two bytes a row: at 80
    /// columns, a map from every id's text held a copy of each id of the root.
    pub id_len: Box<[u16]>,
}

/// The widest each column's content is, over the jobs listed.
#[derive(Default)]
struct Content {
    words: u16,
    symbols: u16,
    ids_whole: u16,
    ids_short: u16,
    project: u16,
    busy: bool,
    cost: u16,
    alert: u16,
    changes: u16,
    changes_short: u16,
    checks: u16,
    host: u16,
    /// The widest kind of agent's name, and which kinds were seen (bits by place in
    /// [`Kind::ALL`]).
    agent: u16,
    kinds: u16,
    /// How many jobs have an alert, and how many a change recorded.
    alerting: usize,
    changed: usize,
    checked: usize,
}

/// Columns `s` takes; ASCII (ids, most projects) without segmenting it.
fn cols(s: &str) -> u16 {
    let n = if s.is_ascii() { s.len() } else { width(s) };
    u16::try_from(n).unwrap_or(u16::MAX)
}

impl Content {
    /// One pass over the jobs listed (every frame, possibly thousands): what varies per job is
    /// looked up or measured as cheaply as it can be, what repeats (a status, a project) is
    /// measured once.
    fn of<'a>(
        app: &App,
        jobs: &[&Job],
        theme: &Theme,
        ids: impl Iterator<Item = (&'a str, usize)>,
    ) -> Content {
        let mut c = Content::default();
        // Looked up once per job: with the default hasher these lookups were a fifth of a
        // frame at 100,000 jobs. The keys are the jobs' own statuses and projects.
        let mut statuses: foldhash::HashMap<(Status, bool), (u16, u16)> = Default::default();
        let mut projects: foldhash::HashMap<&str, u16> = Default::default();
        let mut agents: foldhash::HashMap<&str, Option<Kind>> = Default::default();
        let mut issue_widths = Vec::new();
        for job in jobs {
            let (words, symbols) = *statuses
                .entry((job.status, job.problems.is_empty()))
                .or_insert_with(|| {
                    let w = cols(&status_label(job, theme, true));
                    (w, cols(&status_label(job, theme, false)))
                });
            c.words = c.words.max(words);
            c.symbols = c.symbols.max(symbols);
            let project = *projects
                .entry(job.project())
                .or_insert_with(|| cols(&plain_text(job.project())));
            c.project = c.project.max(project);
            let program = job.meta.as_ref().map_or("", |m| m.agent.as_str());
            let kind = *agents.entry(program).or_insert_with(|| agent_of(job));
            if let Some(k) = kind {
                c.kinds |= 1 << Kind::ALL.iter().position(|a| *a == k).unwrap_or(0);
                c.agent = c.agent.max(cols(k.short()));
            }
            // A lifecycle note (answered, retried, a retry's link, a usage limit's reset) is
            // worth a readable column.
            c.busy |= job.status.is_active()
                || job.progress.is_some()
                || job.stage().is_some()
                || job.status == Status::Limited
                || job.retry_of().is_some();
            if let Some(usd) = cost_of(job) {
                c.cost = c.cost.max(cols(&format_cost(usd)));
            }
            if let Some(stat) = changes_of(job) {
                c.changed += 1;
                c.changes = c.changes.max(cols(&changes_label(stat, false)));
                c.changes_short = c.changes_short.max(cols(&changes_label(stat, true)));
            }
            if let Some(label) = checks_label(job) {
                c.checked += 1;
                c.checks = c.checks.max(cols(&label));
            }
            let alert = alert_width(app, job, theme, &mut issue_widths);
            c.alert = c.alert.max(u16::try_from(alert).unwrap_or(u16::MAX));
            c.alerting += usize::from(alert > 0);
            if !app.opts.hosts.is_empty() {
                c.host = c.host.max(cols(host_label(job)));
            }
        }
        // Ids are ASCII (a queued job's meta id is shown sanitized; measured as any text).
        for (id, short) in ids {
            c.ids_whole = c.ids_whole.max(cols(id));
            c.ids_short = c.ids_short.max(cols(id.get(..short).unwrap_or(id)));
        }
        c
    }
}

/// What a queued row held by the usage limit says, whole (`held: claude limit until 17:00`),
/// where tasks wait on it: one string, whatever the number of rows.
fn held_words(app: &App) -> u16 {
    app.held()
        .into_iter()
        .filter(|(_, waiting)| *waiting > 0)
        .map(|(hold, _)| cols(&hold.why(app.now)).min(HELD_WIDTH))
        .max()
        .unwrap_or(0)
}

/// The widest the progress column grows to say a hold whole.
const HELD_WIDTH: u16 = 34;

impl Columns {
    /// The columns for a table `inner` columns wide listing `jobs`.
    pub fn fit(app: &App, jobs: &[&Job], theme: &Theme, inner: u16) -> Self {
        let wide = inner >= WIDE;
        let shown: Vec<std::borrow::Cow<str>> = jobs.iter().map(|j| id_str(j)).collect();
        // Where ids are whole, their shortest prefixes are not needed (a map of every id).
        let id_len: Box<[u16]> = if wide {
            Box::default()
        } else {
            shortest_unique(&shown)
        };
        let c = if wide {
            let whole = shown.iter().map(|id| (id.as_ref(), id.len()));
            Content::of(app, jobs, theme, whole)
        } else {
            let short = shown
                .iter()
                .zip(&id_len)
                .map(|(id, &n)| (id.as_ref(), n.into()));
            Content::of(app, jobs, theme, short)
        };
        // A column with nothing in it takes no room; one with something is at least as wide as
        // its title (cut with an ellipsis below that).
        let sized = |content: u16, title: u16, cap: u16| match content {
            0 => 0,
            n => n.max(title).min(cap),
        };
        // Where room is short, an almost empty column keeps only what says something.
        let sparse = |rows: usize, cap: u16| {
            if !wide && rows * SPARSE_ONE_IN < jobs.len() {
                cap.min(SPARSE_WIDTH)
            } else {
                cap
            }
        };
        let mut out = Columns {
            words: wide,
            host: sized(c.host, 4, if wide { HOST_WIDE } else { HOST_NARROW }),
            status: if wide { c.words.min(20) } else { c.symbols },
            id: if wide {
                c.ids_whole
            } else {
                c.ids_short.max(2)
            },
            project: sized(c.project, 7, if wide { 16 } else { 10 }),
            // One kind of agent in view says nothing a row needs.
            agent: if c.kinds.count_ones() > 1 {
                sized(c.agent, 5, 8)
            } else {
                0
            },
            progress: match (c.busy, wide) {
                (false, _) => 8,
                (true, false) => 11,
                (true, true) => (inner / 5).clamp(16, 26).max(held_words(app)),
            },
            // As wide as its title: a duration takes at most 7 below 1000 days (`59m59s`,
            // `23h59m`, `999d23h`).
            elapsed: 7,
            cost: 0,
            alert: sized(c.alert, 5, sparse(c.alerting, if wide { 26 } else { 12 })),
            changes: if wide {
                sized(c.changes, 7, 30)
            } else {
                sized(c.changes_short, 7, sparse(c.changed, 12))
            },
            changes_short: !wide,
            checks: sized(c.checks, 6, sparse(c.checked, 8)),
            task: 0,
            id_len,
        };
        out.task = inner.saturating_sub(out.used());
        if c.cost > 0 && wide && out.task >= c.cost.max(4) + 1 + TASK_WITH_COST {
            out.cost = c.cost.max(4);
            out.task = inner.saturating_sub(out.used());
        }
        out.make_room_for_task(inner);
        if out.host > 0 && out.task < TASK_WITH_HOST {
            // Room is short: the host goes first (the header and the rows of hosts that are
            // down still say which host is which).
            out.host = 0;
            out.make_room_for_task(inner);
        }
        if out.agent > 0 && out.task < TASK_WITH_HOST {
            // Then the agent (the detail of the job still says which it is).
            out.agent = 0;
            out.make_room_for_task(inner);
        }
        out
    }

    /// Columns shown, with one space between each, and the task's column.
    fn used(&self) -> u16 {
        let shown = [
            self.status,
            self.host,
            self.id,
            self.project,
            self.agent,
            self.progress,
            self.elapsed,
            self.cost,
            self.alert,
            self.changes,
            self.checks,
        ];
        let n = shown.iter().filter(|w| **w > 0).count() as u16;
        shown.iter().sum::<u16>() + n
    }

    /// The task is the widest column where it can be: the widest of the progress, the alert and
    /// the project gives a column at a time until it is, none going below what still says
    /// something.
    fn make_room_for_task(&mut self, inner: u16) {
        loop {
            self.task = inner.saturating_sub(self.used());
            let mut shrinkable = [
                (self.progress, 6u16, 0usize),
                (self.alert, 2, 1),
                (self.project, 4, 2),
            ];
            shrinkable.sort_by_key(|(w, _, _)| std::cmp::Reverse(*w));
            let widest = shrinkable[0].0.max(self.id).max(self.status);
            if self.task > widest {
                return;
            }
            let Some(&(_, _, which)) = shrinkable.iter().find(|(w, min, _)| *w > *min) else {
                return;
            };
            match which {
                0 => self.progress -= 1,
                1 => self.alert -= 1,
                _ => self.project -= 1,
            }
        }
    }

    /// The characters shown of `id`, the id of row `row` of the list the columns were fitted
    /// to: its shortest unique prefix where the ids are cut.
    pub fn id_shown<'a>(&self, row: usize, id: &'a str) -> &'a str {
        match self.id_len.get(row) {
            Some(&n) => id.get(..usize::from(n)).unwrap_or(id),
            None => id,
        }
    }
}

/// For each id, the length of its shortest prefix that starts no other id of the list: at least
/// its time part (up to the first `-`), then as much of the rest as tells it apart. A prefix
/// ending on the `-` takes one character more, and an id that is the start of another is
/// shown whole. Returned in the order of `ids`; equal ids have the same length.
pub fn shortest_unique<S: AsRef<str>>(ids: &[S]) -> Box<[u16]> {
    let text = |i: u32| ids[i as usize].as_ref();
    // Positions as `u32` and no list of the groups: at 100,000 ids what this works with was
    // megabytes, made again whenever the column is measured, and left holes in the heap.
    let mut order: Vec<u32> = (0..u32::try_from(ids.len()).unwrap_or(u32::MAX)).collect();
    order.sort_unstable_by(|&a, &b| text(a).cmp(text(b)));
    let common = |a: &str, b: &str| {
        a.char_indices()
            .zip(b.chars())
            .find(|((_, x), y)| x != y)
            .map_or(a.len().min(b.len()), |((i, _), _)| i)
    };
    let mut out = vec![0u16; ids.len()].into_boxed_slice();
    // Each distinct id once, in order, with the positions that hold it.
    let mut groups = order.chunk_by(|&a, &b| text(a) == text(b)).peekable();
    let mut before_it: Option<&str> = None;
    while let Some(at) = groups.next() {
        let id = text(at[0]);
        let before = before_it.map_or(0, |b| common(id, b));
        let after = groups.peek().map_or(0, |n| common(id, text(n[0])));
        let floor = id.find('-').unwrap_or(id.len());
        let mut n = (before.max(after) + 1).max(floor).min(id.len());
        if id.as_bytes().get(n.saturating_sub(1)) == Some(&b'-') {
            n = (n + 1).min(id.len());
        }
        // Never inside a character (ids are ASCII, but a queued job shows its meta's id).
        while !id.is_char_boundary(n) {
            n += 1;
        }
        for &k in at {
            out[k as usize] = u16::try_from(n).unwrap_or(u16::MAX);
        }
        before_it = Some(id);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn short(ids: &[&str]) -> Vec<String> {
        let lens = shortest_unique(ids);
        ids.iter()
            .zip(lens)
            .map(|(id, n)| id[..usize::from(n)].to_string())
            .collect()
    }

    #[test]
    fn the_task_is_the_widest_column_and_empty_columns_take_no_room() {
        use crate::tui::testing::app;
        let theme = Theme::default();
        for (w, h) in [(80, 24), (120, 35), (160, 45), (60, 15), (250, 70)] {
            let app = app(w, h);
            let listed: Vec<&Job> = app
                .table
                .view
                .iter()
                .filter_map(|id| app.jobs.get(id).map(|j| &**j))
                .collect();
            let c = Columns::fit(&app, &listed, &theme, w - 2);
            let others = [
                c.status, c.id, c.project, c.progress, c.elapsed, c.cost, c.alert,
            ];
            assert!(others.iter().all(|o| c.task > *o), "{w}x{h}: {c:?}");
            assert_eq!(c.used() + c.task, w - 2, "{w}x{h}: every column is used");
        }
        // No job alerts and none has a cost: neither column takes a column.
        let app = app(160, 45);
        let done: Vec<&Job> = app
            .jobs
            .values()
            .map(|j| &**j)
            .filter(|j| j.id.as_str() == "142315-a1b2" || j.id.as_str() == "152000-f00d")
            .collect();
        let mut quiet: Vec<Job> = done.into_iter().cloned().collect();
        for j in &mut quiet {
            if let Some(m) = j.meta.as_mut() {
                m.usage = None;
            }
        }
        let quiet: Vec<&Job> = quiet.iter().collect();
        let c = Columns::fit(&app, &quiet, &theme, 158);
        assert_eq!((c.alert, c.cost), (0, 0), "{c:?}");
    }

    #[test]
    fn almost_empty_columns_give_their_room_to_the_task_where_it_is_short() {
        use crate::jobs::model::review::Isolation;
        use crate::tui::event::Event;
        use crate::tui::testing::{app, now, reviewed};
        let theme = Theme::default();
        let mut app = app(80, 24);
        let mut gone = reviewed("152000-f00d", Isolation::Worktree);
        if let Some(r) = gone.meta.as_mut().and_then(|m| m.review.as_mut()) {
            r.outcome = "discarded".into();
        }
        let changed = [reviewed("142315-a1b2", Isolation::Worktree), gone];
        let read = changed.iter().map(|j| (j.id.clone(), Some(j.clone())));
        app.update(Event::JobsRead(read.collect()), now());
        let listed: Vec<&Job> = app.table.view.iter().map(|id| &*app.jobs[id]).collect();
        // Two jobs of 15 have a change, two an alarm: each column keeps what says something.
        let c = Columns::fit(&app, &listed, &theme, 78);
        assert_eq!((c.changes, c.alert), (SPARSE_WIDTH, SPARSE_WIDTH), "{c:?}");
        assert!(c.task >= 25, "the task has what they do not need: {c:?}");
        // Where most jobs have a change, the column is as wide as what it says.
        let reviewed: Vec<&Job> = changed.iter().collect();
        let c = Columns::fit(&app, &reviewed, &theme, 78);
        assert_eq!(c.changes, "discarded".len() as u16, "{c:?}");
        // Where room is not short, nothing is cut.
        let c = Columns::fit(&app, &listed, &theme, 158);
        assert!(c.changes > SPARSE_WIDTH && c.alert > SPARSE_WIDTH, "{c:?}");
    }

    #[test]
    fn ids_are_cut_to_their_shortest_unique_prefix() {
        assert_eq!(
            short(&["072004-ab12", "072004-ac34", "081500-ffff"]),
            ["072004-ab", "072004-ac", "081500"]
        );
        assert_eq!(
            short(&["072004-ab12"]),
            ["072004"],
            "the time part at least"
        );
        assert_eq!(
            short(&["072004-ab12", "072004-b000"]),
            ["072004-a", "072004-b"],
            "never a prefix ending on the dash"
        );
        assert_eq!(short(&["0720", "072004-ab"]), ["0720", "072004"]);
        assert_eq!(
            short(&["081500-ffff", "072004-ab12", "081500-ffff", "072004-ac34"]),
            ["081500", "072004-ab", "081500", "072004-ac"],
            "in the order given, the same id cut the same"
        );
        assert_eq!(
            short(&["abc", "abc-1"]),
            ["abc", "abc-1"],
            "a prefix of another is whole"
        );
        // Whatever the list, no shown prefix starts another id.
        let ids = ["101010-aaaa", "101010-aaab", "101011-aaaa", "101011-b", "2"];
        for (s, id) in short(&ids).iter().zip(ids) {
            for other in ids.iter().filter(|o| **o != id) {
                assert!(
                    !other.starts_with(s.as_str()),
                    "{s} is ambiguous with {other}"
                );
            }
        }
    }
}
