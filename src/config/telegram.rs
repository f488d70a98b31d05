//! `[telegram]`: the two-way bridge `luzia notify --watch` runs when the table is there
//! (docs/notifications.md). Where questions and gates are posted, whose answers count, and
//! which Bot API server to reach. The bot's token is a secret: it is read from the environment
//! only (`TELEGRAM_BOT_TOKEN`), and a `token` key in the file is an error that says so.

use std::collections::BTreeSet;

use serde::Deserialize;

use super::ConfigError;

/// Telegram's own Bot API server.
pub const DEFAULT_API: &str = "https://api.telegram.org";

/// `[telegram]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct TelegramFile {
    /// A number (a person's or a group's chat) or `@channelname`; as a string or an integer.
    chat_id: Option<toml::Value>,
    allowed_users: Option<Vec<i64>>,
    api: Option<String>,
    /// Read only to refuse it: a token in a config file is a token in backups and in git.
    token: Option<toml::Value>,
    bot_token: Option<toml::Value>,
}

/// The bridge's settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TelegramConfig {
    /// Where questions and gates are posted: `123456789`, `-1001234567890` or `@channel`.
    pub chat_id: String,
    /// The Telegram user ids whose presses and replies count; nobody else's.
    pub allowed_users: BTreeSet<i64>,
    /// The Bot API server, without a trailing slash.
    pub api: String,
}

pub(super) fn telegram_config(
    file: Option<TelegramFile>,
    invalid: &dyn Fn(String) -> ConfigError,
) -> Result<Option<TelegramConfig>, ConfigError> {
    let Some(file) = file else {
        return Ok(None);
    };
    if file.token.is_some() || file.bot_token.is_some() {
        return Err(invalid(
            "[telegram] holds the bot's token: remove it from the file (a token in a config file \
             ends up in backups and repositories) and give it in the environment as \
             TELEGRAM_BOT_TOKEN instead"
                .into(),
        ));
    }
    let chat_id = chat_id(file.chat_id).map_err(invalid)?;
    let allowed_users: BTreeSet<i64> = file.allowed_users.unwrap_or_default().into_iter().collect();
    if allowed_users.is_empty() {
        return Err(invalid(
            "[telegram] allowed_users is missing or empty: list the Telegram user ids whose \
             answers count, such as allowed_users = [111111111] (docs/notifications.md says how \
             to find yours)"
                .into(),
        ));
    }
    if let Some(bad) = allowed_users.iter().find(|u| **u <= 0) {
        return Err(invalid(format!(
            "[telegram] allowed_users: {bad} is not a user id (a person's id is a positive number)"
        )));
    }
    let api = file.api.unwrap_or_else(|| DEFAULT_API.into());
    let api = api.trim_end_matches('/').to_owned();
    let scheme_ok = api.starts_with("https://") || api.starts_with("http://");
    if !scheme_ok || api.len() <= "https://".len() || api.contains(char::is_whitespace) {
        return Err(invalid(format!(
            "[telegram] api = '{}': give the Bot API server's address, such as \"{DEFAULT_API}\"",
            api.escape_debug()
        )));
    }
    Ok(Some(TelegramConfig {
        chat_id,
        allowed_users,
        api,
    }))
}

fn chat_id(value: Option<toml::Value>) -> Result<String, String> {
    let text = match value {
        None => {
            return Err(
                "[telegram] chat_id is missing: give the chat questions are posted to, such as \
                 chat_id = \"123456789\" (docs/notifications.md says how to find it)"
                    .into(),
            );
        }
        Some(toml::Value::Integer(n)) => n.to_string(),
        Some(toml::Value::String(s)) => s.trim().to_owned(),
        Some(other) => {
            return Err(format!(
                "[telegram] chat_id = {other}: give a number or \"@channelname\""
            ));
        }
    };
    let number = text.strip_prefix('-').unwrap_or(&text);
    let is_number = !number.is_empty() && number.bytes().all(|b| b.is_ascii_digit());
    let is_channel = text.strip_prefix('@').is_some_and(|n| {
        !n.is_empty() && n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
    });
    if is_number || is_channel {
        Ok(text)
    } else {
        Err(format!(
            "[telegram] chat_id = '{}': give the chat's number (\"123456789\", a group's \
             \"-100...\") or \"@channelname\"",
            text.escape_debug()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(body: &str) -> Result<Option<TelegramConfig>, String> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Top {
            telegram: Option<TelegramFile>,
        }
        let top: Top = toml::from_str(body).map_err(|e| e.to_string())?;
        telegram_config(top.telegram, &|message| ConfigError::Invalid {
            path: "c.toml".into(),
            message,
        })
        .map_err(|e| e.to_string())
    }

    #[test]
    fn defaults_and_every_key() {
        assert_eq!(parse("").unwrap(), None);
        let plain = parse("[telegram]\nchat_id = \"123\"\nallowed_users = [7, 5]")
            .unwrap()
            .unwrap();
        assert_eq!(plain.chat_id, "123");
        assert_eq!(plain.allowed_users, [5, 7].into());
        assert_eq!(plain.api, DEFAULT_API);
        let full = parse(
            "[telegram]\nchat_id = -1001\nallowed_users = [1]\napi = \"http://127.0.0.1:81/\"",
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            (full.chat_id.as_str(), full.api.as_str()),
            ("-1001", "http://127.0.0.1:81")
        );
        let channel = parse("[telegram]\nchat_id = \"@ops_room\"\nallowed_users = [1]");
        assert_eq!(channel.unwrap().unwrap().chat_id, "@ops_room");
    }

    #[test]
    fn each_mistake_is_named() {
        let cases = [
            ("[telegram]\nallowed_users = [1]", "chat_id is missing"),
            (
                "[telegram]\nchat_id = \"me\"\nallowed_users = [1]",
                "chat_id = 'me'",
            ),
            (
                "[telegram]\nchat_id = 1.5\nallowed_users = [1]",
                "give a number",
            ),
            ("[telegram]\nchat_id = 1", "allowed_users is missing"),
            (
                "[telegram]\nchat_id = 1\nallowed_users = []",
                "allowed_users is missing",
            ),
            (
                "[telegram]\nchat_id = 1\nallowed_users = [-4]",
                "-4 is not a user id",
            ),
            (
                "[telegram]\nchat_id = 1\nallowed_users = [1]\napi = \"ftp://x\"",
                "api = 'ftp://x'",
            ),
            (
                "[telegram]\nchat_id = 1\nallowed_users = [1]\ntoken = \"123:abc\"",
                "TELEGRAM_BOT_TOKEN",
            ),
            (
                "[telegram]\nchat_id = 1\nallowed_users = [1]\nchat = 2",
                "unknown field `chat`",
            ),
        ];
        for (body, want) in cases {
            let err = parse(body).unwrap_err();
            assert!(err.contains(want), "{body}: {err}");
            assert!(
                !err.contains("123:abc"),
                "the token is never repeated: {err}"
            );
        }
    }
}
