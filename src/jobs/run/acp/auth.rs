//! Logging an agent in with a key of its environment, the ACP way (`authenticate`). An agent
//! that logs in from its saved login only (codex-acp) refuses the session of a user who has
//! nothing but the key exported, as a server has its credentials. Its kind declares which of
//! its `authMethods` each variable stands for ([`KeyLogin`]); when the agent refuses
//! `session/new` or `session/load` for want of a login (ACP's [`AUTH_REQUIRED`]) and offered a
//! method whose variable is set in its environment, the client authenticates with it, once,
//! and asks again. Only after a refusal: a login of the user's own that works is never
//! replaced. What was used is said by the variable's name and the method, never the value.

use serde_json::{Value, json};

use crate::jobs::run::agents::{KeyLogin, Kind};

/// ACP's error for a request that needs a login first.
pub const AUTH_REQUIRED: i64 = -32000;

/// The logins a job's agent may be given: those its kind declares whose variable is set (and
/// not empty) in the agent's environment, in the kind's order of preference.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Keys(Vec<KeyLogin>);

impl Keys {
    /// Of the kind `kind`, `is_set` saying whether a variable of the agent's environment is set
    /// and not empty.
    pub fn of(kind: Kind, is_set: &dyn Fn(&str) -> bool) -> Keys {
        let declared = kind.profile().acp.as_ref().map_or(&[][..], |a| a.logins);
        Keys(declared.iter().copied().filter(|l| is_set(l.var)).collect())
    }
}

/// The login step of one session: the keys, the methods the agent offered, and whether it was
/// tried.
#[derive(Debug, Default)]
pub struct Login {
    keys: Keys,
    offered: Vec<String>,
    tried: bool,
}

impl Login {
    pub fn new(keys: Keys) -> Login {
        Login {
            keys,
            ..Login::default()
        }
    }

    /// What the agent's `initialize` offered (its `authMethods`, each with an `id`).
    pub fn offered(&mut self, auth_methods: &Value) {
        self.offered = auth_methods
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|m| m["id"].as_str().map(str::to_owned))
            .collect();
    }

    /// After a request was refused with `error`: the login to try, when the refusal asks for
    /// one, the agent offered a method whose key is set, and none was tried yet.
    pub fn after(&mut self, error: Option<&Value>) -> Option<KeyLogin> {
        if self.tried || error.and_then(|e| e["code"].as_i64()) != Some(AUTH_REQUIRED) {
            return None;
        }
        let chosen = self
            .keys
            .0
            .iter()
            .find(|k| self.offered.iter().any(|m| m == k.method))
            .copied()?;
        self.tried = true;
        Some(chosen)
    }
}

/// `authenticate`'s parameters.
pub fn params(login: KeyLogin) -> Value {
    json!({"methodId": login.method})
}

/// The line output.log keeps of it: the variable's name and the method, not its value.
pub fn note(agent: &str, login: KeyLogin) -> String {
    format!(
        "luzia: {agent} asked for a login: authenticating with {} (its method {})",
        login.var, login.method
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// codex-acp 0.16.0's `authMethods`, as its `initialize` gives them.
    fn codex_offers() -> Value {
        json!([
            {"id": "chatgpt", "name": "Login with ChatGPT"},
            {"type": "env_var", "id": "codex-api-key", "name": "Use CODEX_API_KEY",
             "vars": [{"name": "CODEX_API_KEY"}]},
            {"type": "env_var", "id": "openai-api-key", "name": "Use OPENAI_API_KEY",
             "vars": [{"name": "OPENAI_API_KEY"}]}
        ])
    }

    fn refused(code: i64) -> Value {
        json!({"code": code, "message": "Authentication required"})
    }

    #[test]
    fn the_login_chosen_after_a_refusal() {
        let gemini_offers = json!([{"id": "oauth-personal"}, {"id": "gemini-api-key"}]);
        // (what, kind, variables set, authMethods, the refusal, the method chosen)
        let cases: &[(&str, Kind, &[&str], Value, Option<Value>, Option<&str>)] = &[
            (
                "OPENAI_API_KEY alone",
                Kind::Codex,
                &["OPENAI_API_KEY"],
                codex_offers(),
                Some(refused(AUTH_REQUIRED)),
                Some("openai-api-key"),
            ),
            (
                "CODEX_API_KEY alone",
                Kind::Codex,
                &["CODEX_API_KEY"],
                codex_offers(),
                Some(refused(AUTH_REQUIRED)),
                Some("codex-api-key"),
            ),
            (
                "both: Codex's own first",
                Kind::Codex,
                &["OPENAI_API_KEY", "CODEX_API_KEY"],
                codex_offers(),
                Some(refused(AUTH_REQUIRED)),
                Some("codex-api-key"),
            ),
            (
                "no key set",
                Kind::Codex,
                &["OPENAI_BASE_URL"],
                codex_offers(),
                Some(refused(AUTH_REQUIRED)),
                None,
            ),
            (
                "the key's method not offered",
                Kind::Codex,
                &["CODEX_API_KEY"],
                json!([{"id": "chatgpt"}, {"id": "openai-api-key"}]),
                Some(refused(AUTH_REQUIRED)),
                None,
            ),
            (
                "no authMethods at all",
                Kind::Codex,
                &["OPENAI_API_KEY"],
                Value::Null,
                Some(refused(AUTH_REQUIRED)),
                None,
            ),
            (
                "refused for another reason",
                Kind::Codex,
                &["OPENAI_API_KEY"],
                codex_offers(),
                Some(refused(-32603)),
                None,
            ),
            (
                "a refusal with no code",
                Kind::Codex,
                &["OPENAI_API_KEY"],
                codex_offers(),
                Some(json!({"message": "Authentication required"})),
                None,
            ),
            (
                "no refusal",
                Kind::Codex,
                &["OPENAI_API_KEY"],
                codex_offers(),
                None,
                None,
            ),
            (
                "a kind that logs in by itself declares none",
                Kind::Gemini,
                &["GEMINI_API_KEY"],
                gemini_offers,
                Some(refused(AUTH_REQUIRED)),
                None,
            ),
            (
                "a plain command",
                Kind::Command,
                &["OPENAI_API_KEY"],
                codex_offers(),
                Some(refused(AUTH_REQUIRED)),
                None,
            ),
        ];
        for (what, kind, set, offers, error, want) in cases {
            let keys = Keys::of(*kind, &|v| set.contains(&v));
            let mut login = Login::new(keys);
            login.offered(offers);
            let chosen = login.after(error.as_ref());
            assert_eq!(chosen.map(|l| l.method), *want, "{what}");
            if let Some(l) = chosen {
                assert_eq!(l.method, params(l)["methodId"], "{what}");
                // Once: a second refusal is the agent's answer.
                assert_eq!(login.after(error.as_ref()), None, "{what}: a second time");
            }
        }
    }

    #[test]
    fn the_note_names_the_variable_and_the_method() {
        let login = KeyLogin {
            var: "OPENAI_API_KEY",
            method: "openai-api-key",
        };
        assert_eq!(
            note("Codex", login),
            "luzia: Codex asked for a login: authenticating with OPENAI_API_KEY (its method \
             openai-api-key)"
        );
    }
}
