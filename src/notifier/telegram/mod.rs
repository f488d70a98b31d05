//! The two-way Telegram bridge `luzia notify --watch` runs when `[telegram]` is configured
//! (docs/notifications.md): each question and gate posted once, with buttons; a press or a
//! reply from an allowed user answers it exactly once, through the same path as the cockpit's;
//! the message edited to say how it ended, wherever it was answered.
//!
//! Rooms: `api` (the Bot API client), `state` (the offset and the posts, kept in the state
//! directory), `format` (the words posted), `countdown` (which posts' time left is edited
//! when), `press` (a button's data, written and read back),
//! `updates` (Telegram's updates read), `answer` (an answer given here or on another host, and
//! what became of an instance), `worker` (the thread that decides) and `handle` (one update
//! acted on). Telegram is reached only outward, by long
//! polling `getUpdates` on a thread of its own: no port is opened. The token comes from the
//! environment and is never said.

mod answer;
mod api;
mod countdown;
mod format;
mod handle;
mod press;
mod state;
mod updates;
mod worker;

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Sender};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use serde_json::json;

use crate::config::{Config, TelegramConfig};
use crate::fleet::Link;
use crate::jobs::insight::notify::this_host;
use crate::jobs::{Job, JobId};
use api::{Api, ApiError, Health};
use worker::{Msg, Worker};

/// Where the token is read from; never from the config file.
pub const TOKEN_ENV: &str = "TELEGRAM_BOT_TOKEN";

/// How long one `getUpdates` waits for an update: the bridge's whole cost at rest is one
/// request this often.
const LONG_POLL: Duration = Duration::from_secs(50);
/// The first wait after a failed poll; doubled after each further one, up to `MAX_BACKOFF`.
const FIRST_BACKOFF: Duration = Duration::from_millis(500);
const MAX_BACKOFF: Duration = Duration::from_secs(60);
/// How long other calls may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// A running bridge: the jobs the watcher reads are handed to it with [`Bridge::seen`].
pub struct Bridge {
    tx: Sender<Msg>,
    /// Posts open now: jobs giving no question or gate matter only while some are.
    open: Arc<AtomicUsize>,
    _links: Vec<Link>,
}

/// The token from the environment, checked to be one before it goes into a URL.
pub fn token_from_env() -> Result<String> {
    let token = std::env::var(TOKEN_ENV).unwrap_or_default();
    let token = token.trim().to_owned();
    if token.is_empty() {
        bail!(
            "[telegram] is configured but {TOKEN_ENV} is not set: give the token @BotFather \
             gave you in the environment (docs/notifications.md), never in the config file"
        );
    }
    if !token
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b':' || b == b'_' || b == b'-')
    {
        bail!(
            "{TOKEN_ENV} does not look like a bot token (@BotFather gives one like \
             123456789:AAH...): check the variable"
        );
    }
    Ok(token)
}

impl Bridge {
    /// Starts the bridge's threads (the poller, the worker, a link per `[hosts.NAME]`).
    pub fn start(
        cfg: &Config,
        tg: &TelegramConfig,
        token: &str,
        root: &Path,
        state_dir: &Path,
    ) -> Result<Bridge> {
        let store = state::Store::open(state_dir)?;
        let state = store.load()?;
        let interrupted: HashSet<String> = state
            .posted
            .iter()
            .filter(|(_, p)| p.closed.is_none() && p.message_id.is_none())
            .map(|(k, _)| k.clone())
            .collect();
        let offset = state.offset;
        let health = Arc::new(Health::default());
        let open = Arc::new(AtomicUsize::new(
            state.posted.values().filter(|p| p.closed.is_none()).count(),
        ));
        let worker = Worker {
            api: Api::new(&tg.api, token, CALL_TIMEOUT, Arc::clone(&health)),
            chat: tg.chat_id.clone(),
            allowed: tg.allowed_users.clone(),
            target: answer::Target {
                root: root.to_owned(),
                hosts: cfg.hosts.clone(),
            },
            rules: cfg.alarms.clone(),
            this_host: this_host(),
            store,
            state,
            interrupted,
            open: Arc::clone(&open),
            last_error: None,
        };
        let (tx, rx) = mpsc::channel();
        std::thread::Builder::new()
            .name("telegram".into())
            .spawn(move || worker.run(rx))
            .context("cannot start the Telegram bridge's thread")?;
        let poller = Api::new(&tg.api, token, LONG_POLL + CALL_TIMEOUT, health);
        let to_worker = tx.clone();
        std::thread::Builder::new()
            .name("telegram-poll".into())
            .spawn(move || poll(&poller, offset, &to_worker))
            .context("cannot start the Telegram bridge's poller")?;
        let links = cfg
            .hosts
            .iter()
            .map(|(name, host)| {
                let tx = tx.clone();
                let host_name = name.clone();
                Link::start(
                    name.clone(),
                    host.clone(),
                    Box::new(move |event| {
                        let _ = tx.send(Msg::Link {
                            host: host_name.clone(),
                            event,
                        });
                    }),
                )
            })
            .collect();
        Ok(Bridge {
            tx,
            open,
            _links: links,
        })
    }

    /// The watcher read `jobs` (having asked for `asked`; `full`: every job there is).
    pub fn seen(&self, jobs: &[Job], asked: &[JobId], full: bool) {
        let asks = |j: &&Job| j.question.is_some() || j.gate.is_some();
        // At rest (nothing open, nobody asking) there is nothing to tell: no wake-up.
        if self.open.load(Ordering::Relaxed) == 0 && !jobs.iter().any(|j| asks(&j)) {
            return;
        }
        let _ = self.tx.send(Msg::Jobs {
            host: None,
            jobs: jobs.to_vec(),
            asked: asked.to_vec(),
            full,
        });
    }
}

/// Asks Telegram for updates for ever, handing each batch to the worker and waiting until it
/// has handled them (so the offset moves only past what was handled). Failures wait, longer
/// each time; what they were is said by the client, once.
fn poll(api: &Api, mut offset: i64, worker: &Sender<Msg>) {
    let mut backoff = FIRST_BACKOFF;
    let mut last_refusal: Option<String> = None;
    loop {
        match api.get_updates(offset, LONG_POLL) {
            Ok(updates) => {
                backoff = FIRST_BACKOFF;
                last_refusal = None;
                if updates.is_empty() {
                    continue;
                }
                let (ack, acked) = mpsc::channel();
                if worker.send(Msg::Updates { updates, ack }).is_err() {
                    return;
                }
                match acked.recv() {
                    Ok(next) => offset = next,
                    Err(_) => return,
                }
            }
            Err(e) => {
                if let ApiError::Refused { .. } = &e {
                    let said = e.to_string();
                    if last_refusal.as_ref() != Some(&said) {
                        crate::say!(
                            "luzia: telegram: {said} (a 401 is a wrong {TOKEN_ENV}; a 409, another \
                             program polling this bot or a webhook set on it)"
                        );
                        last_refusal = Some(said);
                    }
                }
                std::thread::sleep(backoff);
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        }
    }
}

/// `luzia notify --test` with `[telegram]`: one message to the chat, to check the bot, the
/// chat and the token.
pub fn test(tg: &TelegramConfig, token: &str, out: &mut dyn std::io::Write) -> Result<u8> {
    let api = Api::new(&tg.api, token, CALL_TIMEOUT, Arc::default());
    let users: Vec<String> = tg.allowed_users.iter().map(i64::to_string).collect();
    let text = format!(
        "luzia on {}: this chat will be sent the agents' questions and gates. Answers count from \
         the users {}.",
        this_host(),
        users.join(", ")
    );
    match api.send_message(&tg.chat_id, &text, json!({})) {
        Ok(_) => {
            writeln!(
                out,
                "telegram: a test message was sent to chat {}",
                tg.chat_id
            )?;
            Ok(0)
        }
        Err(e) => {
            writeln!(out, "telegram: {e}")?;
            Ok(1)
        }
    }
}
