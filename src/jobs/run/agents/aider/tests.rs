use super::*;

fn read(output: &str) -> Option<Usage> {
    let mut reports = Reports::default();
    for line in output.lines() {
        reports.line(line.as_bytes());
    }
    reports.finish()
}

#[test]
fn a_report_gives_the_tokens_sent_and_received_and_the_session_cost() {
    let usage = read(
        "Aider v0.86.2\nMain model: openai/gpt-4o with diff edit format\nWeak model: gpt-4o-mini\n\n\
         Hello.\n\nTokens: 900 sent, 40 received. Cost: $0.0033 message, $0.0033 session.\n",
    )
    .unwrap();
    assert_eq!(usage.input_tokens, Some(900));
    assert_eq!(usage.output_tokens, Some(40));
    assert_eq!(usage.cost_usd, Some(0.0033));
    assert_eq!(usage.turns, Some(1));
    assert_eq!(usage.model, "openai/gpt-4o");
    assert_eq!(usage.cache_read_tokens, None);
}

#[test]
fn the_tokens_of_every_message_add_up_and_the_last_session_cost_is_the_runs() {
    let usage = read(
        "Model: openai/fake with whole edit format\n\
         Tokens: 2.4k sent, 87 received. Cost: $0.01 message, $0.01 session.\n\
         Applied edit to a.py\n\
         Tokens: 12k sent, 1.0k received. Cost: $0.05 message, $0.06 session.\n",
    )
    .unwrap();
    assert_eq!(usage.input_tokens, Some(14_400));
    assert_eq!(usage.output_tokens, Some(1_087));
    assert_eq!(usage.cost_usd, Some(0.06));
    assert_eq!(usage.turns, Some(2));
    assert_eq!(usage.model, "openai/fake");
}

#[test]
fn without_a_price_there_is_no_cost_and_cache_figures_are_read() {
    let usage = read("Tokens: 3.1k sent, 1.5k cache write, 20k cache hit, 12 received.\n").unwrap();
    assert_eq!(usage.input_tokens, Some(3_100));
    assert_eq!(usage.cache_creation_tokens, Some(1_500));
    assert_eq!(usage.cache_read_tokens, Some(20_000));
    assert_eq!(usage.output_tokens, Some(12));
    assert_eq!(usage.cost_usd, None);
}

#[test]
fn a_cost_on_its_own_line_and_a_report_cut_at_the_terminals_width_are_read_whole() {
    // Both cache figures: Aider puts the cost on the next line.
    let both = read(
        "Tokens: 3.1k sent, 1.5k cache write, 20k cache hit, 12 received.\n\
         Cost: $0.02 message, $0.50 session.\nnext\n",
    )
    .unwrap();
    assert_eq!(both.cost_usd, Some(0.5));
    // Cut at 80 columns by the console Aider prints through.
    let cut = read(
        "Tokens: 12k sent, 120k cache hit, 1.2k received. Cost: $0.0123 message, $1.23 \n\
         session.\n",
    )
    .unwrap();
    assert_eq!(cut.cost_usd, Some(1.23));
    assert_eq!(cut.output_tokens, Some(1_200));
    // The report is the output's last line, without its newline.
    let last = read("Tokens: 5 sent, 1 received.").unwrap();
    assert_eq!(last.input_tokens, Some(5));
}

#[test]
fn colours_and_padding_do_not_hide_a_report_and_other_lines_are_not_one() {
    let usage = read(
        "\x1b[32mTokens: 900 sent, 40 received.\x1b[0m   \nsome Tokens: 1 sent, 1 received.\n",
    )
    .unwrap();
    assert_eq!(usage.input_tokens, Some(900));
    assert_eq!(usage.turns, Some(1));
    assert_eq!(read("Tokens: lots sent\nno report here\n"), None);
    assert_eq!(read(""), None);
}
