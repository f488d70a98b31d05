//! The Agent Client Protocol: the client side luzia speaks to an agent that serves ACP on its
//! stdio (`gemini --acp`, `qwen --acp`, `opencode acp`, `codex-acp`). JSON-RPC 2.0, one message
//! a line, framed by `hitl::mcp::rpc` (the same wire as luzia's MCP server) and read with a
//! bound ([`lines`]); the session ([`client`]); an update made readable ([`render`]) and its
//! figures ([`usage`]); permission requests and elicitations through the job's inbox
//! ([`inbox`]); logging in with a key of the agent's environment when it asks ([`auth`]); the
//! whole run beside the agent's process ([`supervised`]).
//!
//! The messages are read as JSON values, leniently, rather than through the
//! `agent-client-protocol-schema` crate's types: luzia needs a dozen fields of them, the agents
//! put figures in places of their own (Gemini CLI's `_meta.quota`) that the schema does not
//! know, and a field of an unexpected shape must cost that field, never the session.

pub mod auth;
pub mod client;
pub mod inbox;
pub mod lines;
pub mod render;
pub mod supervised;
pub mod usage;
