//! The shape of one row of the action table, and the macro that turns the table into one enum
//! of actions per mode plus the rows themselves (so nothing about an action is said twice).

/// Where a row's default keys come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Defaults {
    Keys(&'static [&'static str]),
    /// The main screen's keys for the action of the same name: `[keys] down = ["j", "ctrl-n"]`
    /// then moves down in every list, unless the mode's own table says otherwise.
    Main,
    /// Any key not bound to another action of the mode (described so, never bound).
    Any(&'static str),
}

/// A row's place in the help popup (which lists the main screen's actions).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Help {
    /// Starts a line of the popup with this text.
    Line(&'static str),
    /// Shares the line of the row before (`↑/k  ↓/j  move / scroll`).
    Joined,
    /// Not in the popup (its footer hint says it).
    Hidden,
}

/// Which focus of the main screen a footer hint belongs to; other modes use `Both`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pane {
    Both,
    Table,
    Output,
    /// Either pane, while a search of the output is going on (its keys then take `n`/`N`).
    Searching,
}

/// A footer hint. Rows whose hints share `pane` and `at` make one hint, their keys joined with
/// `/` in table order (`↑/↓ select`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hint {
    pub pane: Pane,
    /// The place in the footer, from the left.
    pub at: u8,
    pub label: &'static str,
    /// When the line is too narrow, hints go in this order (1 first); 0 never goes.
    pub drop: u8,
    /// The action writes: a read-only cockpit does not offer it.
    pub writes: bool,
}

impl Hint {
    pub const fn writes(self) -> Hint {
        Hint {
            writes: true,
            ..self
        }
    }
}

/// One action of one mode: everything the key maps, the help, the footer and the docs say of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Row {
    pub name: &'static str,
    pub keys: Defaults,
    /// What it does, for the docs.
    pub about: &'static str,
    pub help: Help,
    pub hints: &'static [Hint],
}

pub const fn keys(list: &'static [&'static str]) -> Defaults {
    Defaults::Keys(list)
}

pub const MAIN: Defaults = Defaults::Main;

pub const fn any(shown_as: &'static str) -> Defaults {
    Defaults::Any(shown_as)
}

pub const fn line(text: &'static str) -> Help {
    Help::Line(text)
}

pub const JOIN: Help = Help::Joined;
pub const HIDDEN: Help = Help::Hidden;

const fn hint(pane: Pane, at: u8, drop: u8, label: &'static str) -> Hint {
    Hint {
        pane,
        at,
        label,
        drop,
        writes: false,
    }
}

pub const fn both(at: u8, drop: u8, label: &'static str) -> Hint {
    hint(Pane::Both, at, drop, label)
}

pub const fn table(at: u8, drop: u8, label: &'static str) -> Hint {
    hint(Pane::Table, at, drop, label)
}

pub const fn output(at: u8, drop: u8, label: &'static str) -> Hint {
    hint(Pane::Output, at, drop, label)
}

pub const fn searching(at: u8, drop: u8, label: &'static str) -> Hint {
    hint(Pane::Searching, at, drop, label)
}

/// An action of one mode, as the key map stores it: an index into the mode's rows.
pub trait ModeAction: Copy + Eq + std::fmt::Debug + 'static {
    const SECTION: super::Section;
    fn index(self) -> usize;
    fn from_index(i: usize) -> Self;
}

/// `sections! { Mode: ModeEnum, "name", "title" { Variant "name" keys, "about", help, [hints]; } }`
/// makes `Section` (one variant per mode) and, per mode, an enum of its actions with its rows.
macro_rules! sections {
    ($(
        $(#[doc = $doc:literal])*
        $Section:ident: $Action:ident, $name:literal, $title:literal {
            $( $Variant:ident $aname:literal $keys:expr, $about:literal, $help:expr,
               [$($hint:expr),*]; )*
        }
    )*) => {
        /// A mode with keys of its own: a table of `[keys]` (the main screen's is `[keys]` itself).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Section { $($Section),* }

        impl Section {
            pub const ALL: &'static [Section] = &[$(Section::$Section),*];

            /// The name of its table in `[keys]` (empty for the main screen).
            pub fn name(self) -> &'static str {
                match self { $(Section::$Section => $name),* }
            }

            /// What it is, for the docs.
            pub fn title(self) -> &'static str {
                match self { $(Section::$Section => $title),* }
            }

            pub fn rows(self) -> &'static [Row] {
                match self { $(Section::$Section => $Action::ROWS),* }
            }
        }

        $(
            $(#[doc = $doc])*
            #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
            pub enum $Action { $($Variant),* }

            impl $Action {
                pub const ALL: &'static [$Action] = &[$($Action::$Variant),*];
                const ROWS: &'static [Row] = &[$(Row {
                    name: $aname,
                    keys: $keys,
                    about: $about,
                    help: $help,
                    hints: &[$($hint),*],
                }),*];
            }

            impl ModeAction for $Action {
                const SECTION: Section = Section::$Section;
                fn index(self) -> usize {
                    self as usize
                }
                fn from_index(i: usize) -> Self {
                    Self::ALL[i]
                }
            }
        )*
    };
}

pub(super) use sections;
