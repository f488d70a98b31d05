//! A fake `claude` that speaks Claude Code 2.1.197's stream-json for the usage limit's tests:
//! it reads its task into `$LUZIA_JOB_DIR/stdin.txt`, keeps a transcript per session, succeeds
//! when resumed (`--resume`) or given a task that says PLAIN, and otherwise prints the limit's
//! lines the test gives (with `$reset`, the Unix seconds read from `$RESET_FILE`, and `$sid`)
//! and exits 1.

/// The script, ending on `limit_lines` (shell: `printf` lines of the limit's form).
pub fn script(limit_lines: &str) -> String {
    format!("{HEAD}reset=$(cat \"$RESET_FILE\")\n{limit_lines}exit 1\n")
}

/// Claude Code 2.1.197's lines for the session limit: the API's refusal with the reset to the
/// second (`rate_limit_event`), then its words (the minute, or the hour alone on the hour, in the
/// machine's zone, UTC here).
pub const SESSION_LIMIT: &str = r#"case "$(date -u -d "@$reset" +%M)" in
  00) words=$(date -u -d "@$reset" +%-I%P);;
  *) words=$(date -u -d "@$reset" +%-I:%M%P);;
esac
printf '{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":%s,"rateLimitType":"five_hour","isUsingOverage":false},"session_id":"%s"}\n' "$reset" "$sid"
printf '{"type":"result","subtype":"success","is_error":true,"api_error_status":429,"result":"You'"'"'ve hit your session limit \302\267 resets %s (UTC)","session_id":"%s","num_turns":1,"duration_ms":100,"total_cost_usd":0,"usage":{"input_tokens":0,"output_tokens":0}}\n' "$words" "$sid"
"#;

const HEAD: &str = r#"#!/bin/sh
d="$LUZIA_JOB_DIR"
cat > "$d/stdin.txt"
sid=""; prev=""; resumed=""
for a in "$@"; do
  case "$prev" in --session-id) sid="$a";; --resume) sid="$a"; resumed=1;; esac
  prev="$a"
done
mkdir -p "$HOME/.claude/projects/-proj"
printf '{"prompt": "x"}\n' >> "$HOME/.claude/projects/-proj/$sid.jsonl"
printf '{"type":"system","subtype":"init","session_id":"%s","model":"claude-sonnet-4-5","claude_code_version":"2.1.197","tools":[]}\n' "$sid"
if [ -n "$resumed" ] || grep -q PLAIN "$d/stdin.txt"; then
  printf '{"type":"result","subtype":"success","is_error":false,"result":"done","session_id":"%s","num_turns":1,"duration_ms":100,"total_cost_usd":0,"usage":{"input_tokens":1,"output_tokens":1}}\n' "$sid"
  exit 0
fi
"#;
