//! What every match of a regex must contain: strings (folded, see [`fold`]) one of which the
//! text holds wherever the regex matches. Read off the regex's parsed form (its HIR), with the
//! same flags the matcher compiles it with, so what is required here is required there.
//!
//! A line start (`^`) and a line end (`$`) are the byte `\n`, which is what the searched text
//! holds there (it is folded, and framed by a `\n` on each side). A word boundary is nothing:
//! it takes no byte, so what stands on either side of it is still adjacent.

use regex_syntax::hir::{Class, Hir, HirKind, Look};

use super::fold;
use super::rarity::Model;

/// Strings, one of which every match holds.
pub type AnyOf = Vec<Vec<u8>>;

/// At most this many strings in a set (`[ab][cd]` is four): past it a set says nothing.
const MAX_SET: usize = 16;
/// Strings are cut to this many bytes: the part kept is still required.
const MAX_LEN: usize = 24;
/// A class of more bytes than this (folded) is not spelled out as strings.
const MAX_CLASS: usize = 4;

/// Parses `pattern` as the matcher does (bytes, multi-line, CRLF-aware, ASCII case folding when
/// asked).
pub fn parse(pattern: &str, ignore_case: bool) -> Option<Hir> {
    regex_syntax::ParserBuilder::new()
        .unicode(false)
        .utf8(false)
        .multi_line(true)
        .crlf(true)
        .case_insensitive(ignore_case)
        .build()
        .parse(pattern)
        .ok()
}

/// Every set of strings one of which each match of `hir` must hold, each string at least
/// `min_len` bytes. Empty when the regex holds no such literal (`\d+`, `x*`).
pub fn requirements(hir: &Hir, min_len: usize, model: &Model) -> Vec<AnyOf> {
    let mut all = facts(hir, model).all();
    all.retain(|any| any.iter().all(|s| usable(s, min_len)));
    all.sort();
    all.dedup();
    all
}

/// A string the search can look for: long enough, and not only line ends.
fn usable(s: &[u8], min_len: usize) -> bool {
    s.len() >= min_len && s.iter().filter(|&&b| b != b'\n').count() >= min_len - 1
}

/// What a piece of a regex tells about the text it matches.
#[derive(Clone, Debug)]
struct Facts {
    /// It matches exactly one of these strings.
    exact: Option<Vec<Vec<u8>>>,
    /// Every match starts with one of these (the empty string when nothing is known).
    prefix: Vec<Vec<u8>>,
    /// Every match ends with one of these.
    suffix: Vec<Vec<u8>>,
    /// Sets found inside: every match holds one string of each.
    inner: Vec<AnyOf>,
}

fn nothing_known() -> Vec<Vec<u8>> {
    vec![Vec::new()]
}

impl Facts {
    fn unknown() -> Facts {
        Facts {
            exact: None,
            prefix: nothing_known(),
            suffix: nothing_known(),
            inner: Vec::new(),
        }
    }

    fn exact(set: Vec<Vec<u8>>) -> Facts {
        let set = sorted(set);
        Facts {
            prefix: set.clone(),
            suffix: set.clone(),
            inner: Vec::new(),
            exact: Some(set),
        }
    }

    fn inexact(self) -> Facts {
        Facts {
            exact: None,
            ..self
        }
    }

    /// Every set this piece requires.
    fn all(self) -> Vec<AnyOf> {
        let mut out = self.inner;
        out.extend(self.exact);
        out.push(self.prefix);
        out.push(self.suffix);
        out
    }
}

fn sorted(mut v: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    v.sort();
    v.dedup();
    v
}

/// Each string of `a` followed by each of `b`; `None` when that makes too many.
fn cross(a: &[Vec<u8>], b: &[Vec<u8>]) -> Option<Vec<Vec<u8>>> {
    if a.len() * b.len() > MAX_SET {
        return None;
    }
    let out = a
        .iter()
        .flat_map(|x| b.iter().map(move |y| [x.as_slice(), y].concat()))
        .collect();
    Some(sorted(out))
}

/// The last [`MAX_LEN`] bytes of each: what ends where a walk stands is still there.
fn tails(v: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    sorted(
        v.into_iter()
            .map(|s| s[s.len().saturating_sub(MAX_LEN)..].to_vec())
            .collect(),
    )
}

/// The first [`MAX_LEN`] bytes of each.
fn heads(v: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    sorted(
        v.into_iter()
            .map(|mut s| {
                s.truncate(MAX_LEN);
                s
            })
            .collect(),
    )
}

/// The folded bytes a class matches, when few.
fn class_bytes(class: &Class) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let mut add = |lo: u32, hi: u32| {
        if hi - lo > 256 || hi > 0x7f && matches!(class, Class::Unicode(_)) {
            return false;
        }
        out.extend((lo..=hi).filter_map(|b| u8::try_from(b).ok()).map(fold));
        true
    };
    let ok = match class {
        Class::Bytes(c) => c
            .ranges()
            .iter()
            .all(|r| add(u32::from(r.start()), u32::from(r.end()))),
        Class::Unicode(c) => c
            .ranges()
            .iter()
            .all(|r| add(u32::from(r.start()), u32::from(r.end()))),
    };
    out.sort_unstable();
    out.dedup();
    (ok && !out.is_empty() && out.len() <= MAX_CLASS).then_some(out)
}

fn facts(hir: &Hir, model: &Model) -> Facts {
    match hir.kind() {
        HirKind::Empty => Facts::exact(nothing_known()),
        HirKind::Literal(lit) => Facts::exact(vec![lit.0.iter().map(|&b| fold(b)).collect()]),
        HirKind::Class(class) => match class_bytes(class) {
            Some(bytes) => Facts::exact(bytes.into_iter().map(|b| vec![b]).collect()),
            None => Facts::unknown(),
        },
        HirKind::Look(
            Look::Start | Look::End | Look::StartLF | Look::EndLF | Look::StartCRLF | Look::EndCRLF,
        ) => Facts::exact(vec![b"\n".to_vec()]),
        HirKind::Look(_) => Facts::exact(nothing_known()),
        HirKind::Capture(c) => facts(&c.sub, model),
        HirKind::Repetition(rep) => repetition(rep, model),
        HirKind::Alternation(subs) => alternation(subs, model),
        HirKind::Concat(subs) => concat(subs, model),
    }
}

fn repetition(rep: &regex_syntax::hir::Repetition, model: &Model) -> Facts {
    let sub = facts(&rep.sub, model);
    match (rep.min, rep.max, &sub.exact) {
        // `s?`: the string or nothing.
        (0, Some(1), Some(e)) if e.len() < MAX_SET => {
            let mut e = e.clone();
            e.push(Vec::new());
            Facts::exact(e)
        }
        (0, _, _) => Facts::unknown(),
        // `s{2}`: spelled out.
        (n, Some(m), Some(e)) if n == m && n <= 4 => {
            let mut acc = nothing_known();
            for _ in 0..n {
                match cross(&acc, e) {
                    Some(x) => acc = heads(x),
                    None => return sub.inexact(),
                }
            }
            Facts::exact(acc)
        }
        // At least once: what one occurrence requires, and it starts and ends as one does.
        _ => sub.inexact(),
    }
}

fn alternation(subs: &[Hir], model: &Model) -> Facts {
    let all: Vec<Facts> = subs.iter().map(|s| facts(s, model)).collect();
    if let Some(sets) = all
        .iter()
        .map(|f| f.exact.as_ref())
        .collect::<Option<Vec<_>>>()
    {
        let set: Vec<Vec<u8>> = sets.into_iter().flatten().cloned().collect();
        if set.len() <= MAX_SET {
            return Facts::exact(set);
        }
    }
    let union = |part: fn(&Facts) -> &Vec<Vec<u8>>| {
        let v: Vec<Vec<u8>> = all.iter().flat_map(|f| part(f).iter().cloned()).collect();
        if v.len() > MAX_SET {
            nothing_known()
        } else {
            sorted(v)
        }
    };
    let prefix = union(|f| &f.prefix);
    let suffix = union(|f| &f.suffix);
    // Each branch's rarest set, together: whichever branch matched left one of them.
    let mut any = Vec::new();
    for f in &all {
        match rarest(f.clone().all(), model) {
            Some(set) => any.extend(set),
            None => {
                any.clear();
                break;
            }
        }
    }
    let inner = if any.is_empty() || any.len() > MAX_SET {
        Vec::new()
    } else {
        vec![sorted(any)]
    };
    Facts {
        exact: None,
        prefix,
        suffix,
        inner,
    }
}

fn concat(subs: &[Hir], model: &Model) -> Facts {
    let mut inner = Vec::new();
    // The strings the text holds ending where the walk stands.
    let mut run = nothing_known();
    // The whole so far, while every piece was exact.
    let mut whole = Some(nothing_known());
    let mut prefix = None;
    for f in subs.iter().map(|s| facts(s, model)) {
        inner.extend(f.inner.iter().cloned());
        match &f.exact {
            Some(e) => {
                run = match cross(&run, e) {
                    Some(x) => tails(x),
                    None => {
                        inner.push(std::mem::take(&mut run));
                        e.clone()
                    }
                };
                whole = whole.and_then(|w| cross(&w, e).map(heads));
            }
            None => {
                inner.push(cross(&run, &f.prefix).map_or_else(|| run.clone(), tails));
                if prefix.is_none() {
                    prefix = Some(match &whole {
                        Some(w) => cross(w, &f.prefix).map_or_else(|| w.clone(), heads),
                        None => nothing_known(),
                    });
                }
                whole = None;
                run = f.suffix.clone();
            }
        }
    }
    match whole {
        Some(w) => Facts::exact(w),
        None => {
            inner.push(run.clone());
            Facts {
                exact: None,
                prefix: prefix.unwrap_or_else(nothing_known),
                suffix: run,
                inner,
            }
        }
    }
}

/// The set least likely to turn up in ordinary text (see [`super::rarity`]).
fn rarest(sets: Vec<AnyOf>, model: &Model) -> Option<AnyOf> {
    sets.into_iter()
        .filter(|any| any.iter().all(|s| usable(s, super::MIN_LEN)))
        .map(|any| (model.of_set(&any), any))
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, any)| any)
}

/// The bytes (folded) a match can start with, when every match starts at a line start:
/// `^FAILED` can only match a line that starts with `f` (or holds a carriage return, after
/// which `^` matches too).
pub fn line_start_bytes(hir: &Hir) -> Option<Box<[bool; 256]>> {
    let mut h = hir;
    while let HirKind::Capture(c) = h.kind() {
        h = &c.sub;
    }
    let HirKind::Concat(subs) = h.kind() else {
        return None;
    };
    let (first_piece, rest) = subs.split_first()?;
    if !matches!(
        first_piece.kind(),
        HirKind::Look(Look::Start | Look::StartLF | Look::StartCRLF)
    ) {
        return None;
    }
    let mut set = Box::new([false; 256]);
    for piece in rest {
        if !first_bytes(piece, &mut set) {
            return Some(set);
        }
    }
    // Every piece may match nothing: so may the whole, anywhere.
    None
}

/// Adds the bytes `hir` can start with to `set`; returns whether it can match the empty string.
fn first_bytes(hir: &Hir, set: &mut [bool; 256]) -> bool {
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => true,
        HirKind::Literal(l) => match l.0.first() {
            Some(&b) => {
                set[usize::from(fold(b))] = true;
                false
            }
            None => true,
        },
        HirKind::Class(Class::Bytes(c)) => {
            for r in c.ranges() {
                for b in r.start()..=r.end() {
                    set[usize::from(fold(b))] = true;
                }
            }
            false
        }
        HirKind::Class(Class::Unicode(c)) => {
            for r in c.ranges() {
                if u32::from(r.end()) > 0x7f {
                    // Any lead byte of a multi-byte character: all of them, to be safe.
                    set[0x80..].fill(true);
                }
                for ch in r.start()..=r.end().min('\x7f') {
                    set[usize::from(fold(ch as u8))] = true;
                }
            }
            false
        }
        HirKind::Capture(c) => first_bytes(&c.sub, set),
        HirKind::Repetition(r) => first_bytes(&r.sub, set) || r.min == 0,
        HirKind::Concat(subs) => subs.iter().all(|s| first_bytes(s, set)),
        HirKind::Alternation(subs) => {
            // Every branch adds its bytes: no stopping at the first that can match nothing.
            let mut empty = false;
            for s in subs {
                empty |= first_bytes(s, set);
            }
            empty
        }
    }
}
