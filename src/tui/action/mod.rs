//! What a key means, defined once. Every mode's actions are rows of the table below: the name
//! in `[keys]`, the default keys, what it does, its line in the help popup and its hint in the
//! footer. The key map, the help popup, the footer and the key table in docs/cockpit.md are all
//! made from it, so none of them can say something the keys do not do.
//!
//! Within a mode, a key bound to several actions does the first that applies where the operator
//! is (see `NormalAction::situational`). While a text input has the keyboard, typing, Backspace,
//! Delete and the cursor keys always edit the text (`TextInput::always_edits`). Ctrl-C bound to
//! nothing in an editor clears its text, then closes it (see `app/keys.rs`).

mod doc;
mod key;
mod keymap;
mod row;
mod show;

pub use doc::markdown;
pub use key::Key;
pub use keymap::KeyMap;
pub use row::{Defaults, Help, Hint, ModeAction, Pane, Row};
pub use show::{FooterHint, Place};

use row::{HIDDEN, JOIN, MAIN, any, both, keys, line, output, searching, sections, table};

sections! {
    /// The main screen: the jobs table and the output pane.
    Normal: NormalAction, "", "the main screen (the jobs table and the output pane)" {
        Up "up" keys(&["up", "k"]), "move up in the table; scroll up in the output pane",
            line("move / scroll"), [table(1, 15, "select"), output(1, 0, "scroll")];
        Down "down" keys(&["down", "j"]), "move down in the table; scroll down in the output pane",
            JOIN, [table(1, 15, "select"), output(1, 0, "scroll")];
        PageUp "page_up" keys(&["pageup", "ctrl-b"]), "a page up", line("page up / down"), [];
        PageDown "page_down" keys(&["pagedown", "ctrl-f"]), "a page down", JOIN, [];
        Top "top" keys(&["home", "g"]), "the first job; the top of the output",
            line("first / last job, top / end of output"), [];
        Bottom "bottom" keys(&["G"]), "the last job (in the output pane, `follow` does)", JOIN, [];
        FocusNext "focus_next" keys(&["tab"]), "switch focus: the jobs table or the output pane",
            line("switch focus: jobs table / output pane"),
            [table(7, 11, "output"), output(7, 12, "jobs")];
        PrevTab "prev_tab" keys(&["left", "h"]), "the previous view (All, Active, Waiting, Done, Failed)",
            line("view: All, Active, Waiting, Done, Failed"), [table(13, 6, "view")];
        NextTab "next_tab" keys(&["right", "l"]), "the next view", JOIN, [table(13, 6, "view")];
        Open "open" keys(&["enter"]), "answer the selected job if it waits, else its detail view",
            line("answer the selected job if it waits, else details"), [table(2, 0, "open")];
        Inbox "inbox" keys(&["i"]), "the inbox: pending questions and gates, oldest first",
            line("inbox of questions and gates / detail view"),
            [table(3, 0, "inbox"), output(11, 0, "inbox")];
        Details "details" keys(&["v"]), "the detail view of the selected job", JOIN, [];
        NewTask "new_task" keys(&["n"]), "the input bar: dispatch a new task",
            line("new task: the input bar (project, task)"), [table(4, 14, "new").writes()];
        Command "command_line" keys(&[":"]),
            "the command line: `:q`, `:run TASK`, `:project NAME`, `:sort KEY`, `:view NAME`, `:help` (tab completes)",
            line("command line: :q :run :project :sort :view :help"), [];
        Kill "kill" keys(&["K"]), "kill the selected job (asks first)",
            line("kill the selected job (asks) / retry it"), [table(5, 10, "kill").writes()];
        Retry "retry" keys(&["r"]), "retry the selected job", JOIN, [table(6, 9, "retry").writes()];
        Reply "reply" keys(&["R"]),
            "reply to the selected job: continue its Claude Code session with a message (a new job)",
            line("reply to the job's session / open it here"), [];
        Attach "attach" keys(&["a"]),
            "open the selected job's Claude Code session in this terminal (the cockpit steps aside)",
            JOIN, [];
        Diff "diff" keys(&["d"]),
            "the selected job's change: the files it changed and the diff (a snapshot or worktree job)",
            line("the job's change: diff / merge it / discard it"), [];
        Merge "merge" keys(&["M"]),
            "merge the selected job's branch into the project (asks first, saying what it will do)",
            JOIN, [];
        Discard "discard" keys(&["X"]),
            "discard the selected job's change: its worktree and its branch (asks first)",
            JOIN, [];
        Filter "filter" keys(&["/"]), "filter the jobs by text (in the table)",
            line("filter jobs (table) / search output (output)"), [table(8, 12, "filter")];
        Search "search" keys(&["/"]), "search the output (in the output pane)", JOIN,
            [output(3, 14, "search")];
        SearchNext "search_next" keys(&["n"]), "the next match of the search (while there is one)",
            line("next / previous match"), [searching(4, 14, "match")];
        SearchPrev "search_prev" keys(&["N"]), "the previous match", JOIN,
            [searching(4, 14, "match")];
        Follow "follow" keys(&["end", "G"]), "follow the output again",
            line("follow the output again"), [output(2, 0, "follow")];
        ToggleWrap "toggle_wrap" keys(&["w"]), "wrap long output lines, or not",
            line("wrap long output lines / scroll them sideways"), [output(5, 9, "wrap")];
        ScrollLeft "scroll_left" keys(&["<"]), "scroll long output lines back to the left",
            JOIN, [output(9, 3, "sideways")];
        ScrollRight "scroll_right" keys(&[">"]),
            "scroll long output lines to the right (while they are not wrapped)", JOIN,
            [output(9, 3, "sideways")];
        Zoom "zoom" keys(&["z"]),
            "zoom the pane with the focus to the whole body, and back (tab zooms the other)",
            line("zoom the focused pane to the whole screen / back"),
            [table(11, 7, "zoom"), output(10, 11, "zoom")];
        PickProject "pick_project" keys(&["p"]), "pick the project filter",
            line("pick the project filter"), [table(9, 5, "project")];
        Sort "sort" keys(&["s"]), "the next sort order: status, newest, project, longest",
            line("sort: status, newest, project, longest"), [table(10, 3, "sort")];
        Back "back" keys(&["esc"]), "clear the search (output pane), the filter, then the project filter",
            line("close, clear the filter or search"), [];
        Events "events" keys(&["e"]), "recent events: what happened while you were away",
            line("recent events: what happened while you were away"),
            [table(12, 1, "events")];
        NextIssue "next_issue" keys(&["]"]), "the next output line showing a known issue",
            line("next / previous output line showing a known issue"), [output(6, 2, "issue")];
        PrevIssue "prev_issue" keys(&["["]), "the previous output line showing a known issue",
            JOIN, [output(6, 2, "issue")];
        Help "help" keys(&["?", "f1"]), "the help", line("this help"),
            [table(14, 0, "help"), output(12, 0, "help")];
        Quit "quit" keys(&["q", "ctrl-c"]),
            "quit (while a draft is kept in the input bar, the first press asks again)", line("quit"),
            [table(15, 0, "quit"), output(13, 0, "quit")];
    }

    /// The detail view of one job.
    Detail: DetailAction, "detail", "the detail view of a job" {
        Close "close" keys(&["esc", "enter", "q"]), "back to the main screen", HIDDEN,
            [both(1, 0, "close")];
        Up "up" MAIN, "scroll up", HIDDEN, [both(2, 0, "scroll")];
        Down "down" MAIN, "scroll down", HIDDEN, [both(2, 0, "scroll")];
        PageUp "page_up" MAIN, "scroll a page up", HIDDEN, [];
        PageDown "page_down" MAIN, "scroll a page down", HIDDEN, [];
        Top "top" MAIN, "back to the top", HIDDEN, [];
        Help "help" MAIN, "the help", HIDDEN, [both(3, 0, "help")];
    }

    /// The diff view of one job's change.
    Diff: DiffAction, "diff", "the diff view of a job's change" {
        Close "close" keys(&["esc", "q"]), "back to the main screen", HIDDEN,
            [both(1, 0, "close")];
        Up "up" MAIN, "scroll up", HIDDEN, [both(2, 0, "scroll")];
        Down "down" MAIN, "scroll down", HIDDEN, [both(2, 0, "scroll")];
        PageUp "page_up" keys(&["pageup", "ctrl-b", "ctrl-u"]), "scroll a page up", HIDDEN, [];
        PageDown "page_down" keys(&["pagedown", "ctrl-f", "ctrl-d", "space"]), "scroll a page down",
            HIDDEN, [];
        Top "top" keys(&["home", "g"]), "the top: the list of files", HIDDEN, [];
        Bottom "bottom" keys(&["end", "G"]), "the end of the diff", HIDDEN, [];
        NextFile "next_file" keys(&["n", "tab"]), "the next file's diff", HIDDEN,
            [both(3, 1, "file")];
        PrevFile "prev_file" keys(&["p", "shift-tab"]), "the previous file's diff", HIDDEN,
            [both(3, 1, "file")];
        Left "left" keys(&["left", "h"]), "scroll long lines back to the left", HIDDEN,
            [both(4, 2, "sideways")];
        Right "right" keys(&["right", "l"]), "scroll long lines to the right", HIDDEN,
            [both(4, 2, "sideways")];
        Merge "merge" MAIN, "merge this change into the project (asks first)", HIDDEN,
            [both(5, 3, "merge").writes()];
        Discard "discard" MAIN, "discard this change (asks first)", HIDDEN,
            [both(6, 4, "discard").writes()];
        Help "help" MAIN, "the help", HIDDEN, [];
    }

    /// The recent-events view.
    Events: EventsAction, "events", "the recent events" {
        Up "up" MAIN, "the newer event", HIDDEN, [both(1, 0, "move")];
        Down "down" MAIN, "the older event", HIDDEN, [both(1, 0, "move")];
        PageUp "page_up" MAIN, "a page up", HIDDEN, [];
        PageDown "page_down" MAIN, "a page down", HIDDEN, [];
        Top "top" MAIN, "the newest event", HIDDEN, [];
        Bottom "bottom" MAIN, "the oldest event", HIDDEN, [];
        Open "open" MAIN, "back to the table, on the event's job", HIDDEN,
            [both(2, 0, "go to the job")];
        Close "close" keys(&["esc", "e", "q"]), "back to the main screen", HIDDEN,
            [both(3, 0, "close")];
        Help "help" MAIN, "the help", HIDDEN, [both(4, 0, "help")];
        Progress "progress" keys(&["p"]), "show or hide progress events (hidden at first)",
            HIDDEN, [both(5, 2, "progress")];
        AllKinds "all_kinds" keys(&["0"]), "events of every kind", HIDDEN, [both(6, 1, "kind")];
        Questions "questions" keys(&["1"]),
            "only questions and gates, and their answers (again: every kind)", HIDDEN,
            [both(6, 1, "kind")];
        Failures "failures" keys(&["2"]), "only jobs that failed, died or were killed",
            HIDDEN, [both(6, 1, "kind")];
        Finishes "finishes" keys(&["3"]), "only jobs finishing, however they ended", HIDDEN,
            [both(6, 1, "kind")];
        Alarms "alarms" keys(&["4"]), "only alarms and known issues", HIDDEN,
            [both(6, 1, "kind")];
        OnlyProgress "only_progress" keys(&["5"]), "only progress events", HIDDEN,
            [both(6, 1, "kind")];
    }

    /// The project picker.
    Picker: PickerAction, "picker", "the project picker" {
        Up "up" MAIN, "the project above", HIDDEN, [];
        Down "down" MAIN, "the project below", HIDDEN, [];
        Top "top" MAIN, "the first entry (all projects)", HIDDEN, [];
        Bottom "bottom" MAIN, "the last project", HIDDEN, [];
        Choose "choose" keys(&["enter"]), "filter by the project highlighted", HIDDEN,
            [both(1, 0, "choose")];
        Cancel "cancel" keys(&["esc", "q"]), "close, the filter as it was", HIDDEN,
            [both(2, 0, "cancel")];
        Help "help" MAIN, "the help", HIDDEN, [];
    }

    /// The help popup.
    Help: HelpAction, "help", "the help popup" {
        Up "up" MAIN, "scroll the help up (where it is taller than the screen)", HIDDEN,
            [both(2, 1, "scroll")];
        Down "down" MAIN, "scroll the help down", HIDDEN, [both(2, 1, "scroll")];
        Close "close" any("any key"), "close the help", HIDDEN, [both(1, 0, "close")];
    }

    /// The popup that asks before killing a job, or merging or discarding its change.
    Confirm: ConfirmAction, "confirm", "the confirmation of a kill, a merge or a discard" {
        Yes "yes" keys(&["y", "Y"]), "yes: do it", HIDDEN, [both(1, 0, "yes")];
        No "no" any("any"), "no: close and do nothing", HIDDEN, [both(2, 0, "no")];
    }

    /// The inbox popup: one question or gate after the other.
    Inbox: InboxAction, "inbox", "the inbox of questions and gates" {
        Next "next" keys(&["tab", "right"]), "the next question or gate", HIDDEN,
            [both(1, 0, "next")];
        Prev "prev" keys(&["shift-tab", "left"]), "the previous question or gate", HIDDEN, [];
        Close "close" keys(&["esc", "q"]),
            "close the inbox (while typing a reason for a denial: back to the gate; `q` is then a letter)",
            HIDDEN,
            [both(2, 0, "close the inbox")];
        Up "up" keys(&["up", "k"]), "the option above (a choice)", HIDDEN, [];
        Down "down" keys(&["down", "j"]), "the option below (a choice)", HIDDEN, [];
        Send "send" keys(&["enter"]), "send the option picked, or the text typed", HIDDEN, [];
        Toggle "toggle" keys(&["space"]),
            "pick or unpick the option (a choice of several)", HIDDEN, [];
        NewLine "new_line" keys(&["alt-enter", "ctrl-j", "shift-enter"]),
            "start a new line of the text typed", HIDDEN, [];
        Yes "yes" keys(&["y", "Y"]), "answer yes (a yes/no question)", HIDDEN, [];
        No "no" keys(&["n", "N"]), "answer no (a yes/no question)", HIDDEN, [];
        Approve "approve" keys(&["a"]), "approve the gate", HIDDEN, [];
        ApproveSession "approve_session" keys(&["A"]),
            "approve the gate for the session: the agent stops asking for requests like it (only where the gate offers it)",
            HIDDEN, [];
        Deny "deny" keys(&["d"]), "deny the gate: type the reason, then send it", HIDDEN, [];
        Help "help" MAIN, "the help (not while typing)", HIDDEN, [];
    }

    /// The input bar, where a new task is typed.
    InputBar: InputBarAction, "input_bar", "the input bar (a new task)" {
        Dispatch "dispatch" keys(&["enter"]), "dispatch the task typed", HIDDEN,
            [both(1, 0, "dispatch")];
        NewLine "new_line" keys(&["alt-enter", "ctrl-j", "shift-enter"]),
            "start a new line of the task", HIDDEN, [];
        Hide "hide" keys(&["esc"]), "hide the bar (the text stays for next time)", HIDDEN,
            [both(2, 0, "hide")];
        NextProject "next_project" keys(&["tab"]), "the next project", HIDDEN, [];
        PrevProject "prev_project" keys(&["shift-tab"]), "the previous project", HIDDEN, [];
        NextAgent "next_agent" keys(&["ctrl-t"]),
            "the next agent for the task (the project's own first, then every agent by name)",
            HIDDEN, [];
        PrevAgent "prev_agent" keys(&["alt-t"]), "the previous agent", HIDDEN, [];
    }

    /// Typing the jobs filter.
    Filter: FilterAction, "filter", "typing the jobs filter" {
        Keep "keep" keys(&["enter"]), "keep the filter, back to the table", HIDDEN,
            [both(1, 0, "keeps")];
        Clear "clear" keys(&["esc"]), "clear the filter", HIDDEN, [both(2, 0, "clears")];
    }

    /// Typing a search of the output.
    Search: SearchAction, "search", "typing a search of the output" {
        Search "search" keys(&["enter"]), "search the output for the text", HIDDEN,
            [both(1, 0, "searches")];
        Cancel "cancel" keys(&["esc"]), "leave the search as it was", HIDDEN,
            [both(2, 0, "cancels")];
    }

    /// The command line, opened with `:`.
    Command: CommandAction, "command", "the command line (`:q`, `:run TASK`, ...)" {
        Run "run" keys(&["enter"]), "run the command typed", HIDDEN, [both(1, 0, "runs")];
        Complete "complete" keys(&["tab"]),
            "complete the command's name, or its argument (projects, sort keys, views)", HIDDEN,
            [both(2, 0, "completes")];
        Close "close" keys(&["esc"]), "close the command line", HIDDEN, [both(3, 0, "closes")];
    }
}

impl NormalAction {
    /// Actions that apply only in some places (a focus, a search going on). A key bound to
    /// several actions tries these first, so `G` is the last job in the table and follows in the
    /// output pane, and `n` is the next match while there is a search and a new task otherwise.
    pub fn situational(self) -> bool {
        matches!(
            self,
            NormalAction::Bottom
                | NormalAction::Filter
                | NormalAction::Search
                | NormalAction::SearchNext
                | NormalAction::SearchPrev
        )
    }
}

impl Section {
    /// How the config file names its table: `[keys]` or `[keys.inbox]`.
    pub fn table_name(self) -> String {
        match self.name() {
            "" => "[keys]".to_string(),
            name => format!("[keys.{name}]"),
        }
    }
}
