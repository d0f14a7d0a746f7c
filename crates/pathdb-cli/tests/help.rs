//! What `--help` shows: each command's own options first, the global ones under their own
//! heading, none that mean nothing to the command.

use crate::ok;

/// The options listed under `heading` (up to the next heading) in `help`.
fn options_under<'a>(help: &'a str, heading: &str) -> Vec<&'a str> {
    help.lines()
        .skip_while(|line| *line != heading)
        .skip(1)
        .take_while(|line| line.is_empty() || line.starts_with(' '))
        .filter_map(|line| line.split_whitespace().next())
        .filter(|word| word.starts_with('-'))
        .collect()
}

#[test]
fn serve_help_lists_no_client_options() {
    let help = ok(&["serve", "--help"]);
    for option in ["--json", "--server", "--token", "--schema-version"] {
        assert!(
            !help.contains(option),
            "serve --help lists {option}:\n{help}"
        );
    }
    assert!(help.contains("--db"), "{help}");
    // Still accepted (PATHDB_SERVER in the environment must not stop a server), and ignored.
    let usage = crate::fails(&["serve", "--json", "--server", "x:1", "--addr", "nonsense"]);
    assert!(usage.contains("--addr"), "{usage}");
}

#[test]
fn ls_help_keeps_global_options_apart() {
    let help = ok(&["ls", "--help"]);
    let own = options_under(&help, "Options:");
    let global = options_under(&help, "Global options:");
    assert!(
        own.contains(&"--children") && own.contains(&"--prefix"),
        "{help}"
    );
    assert_eq!(
        global,
        ["--db", "--json", "--server", "--token", "--schema-version"],
        "{help}"
    );
    assert!(!own.contains(&"--server"), "{help}");
}

#[test]
fn completions_help_gives_a_line_that_works_on_a_fresh_account() {
    let help = ok(&["completions", "--help"]);
    assert!(
        help.contains(
            "mkdir -p ~/.local/share/bash-completion/completions && pathdb completions bash"
        ),
        "{help}"
    );
}
