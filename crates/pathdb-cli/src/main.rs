//! `pathdb`: PathDB's command-line tool. `main` only parses arguments and maps the outcome to an
//! exit status (`exit.rs`); each subcommand lives in `cmd/`.

mod address_file;
mod client;
mod cmd;
mod db;
mod exit;

use std::process::ExitCode;

/// No transparent huge pages for this process (Linux; elsewhere nothing to do). With them, the
/// memory a server takes as it runs (redb's cache filling, the allocator's fresh pages) comes
/// in 2 MiB pages the kernel zeroes on first touch: under durable puts that zeroing alone was
/// 6.5% of the server's CPU, most of it on the checkpoint thread, and puts cost about a tenth
/// more CPU with a worse p99 (docs/benchmarks.md, "Where logs end, one snapshot for readers, a
/// two-level overlay, no huge pages"). Redis turns them off for itself the same way. A kernel
/// without the option (before 3.15) refuses it: nothing changes.
fn without_huge_pages() {
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_THP_DISABLE takes integers and changes only the process's paging policy,
    // no memory this program holds.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

/// mimalloc rather than the system's allocator (pathdb-server's `allocator` says why, and why not
/// through the `mimalloc` crate).
#[global_allocator]
static ALLOCATOR: pathdb_server::allocator::Allocator = pathdb_server::allocator::Allocator;

fn main() -> ExitCode {
    without_huge_pages();
    // `--json` is read before parsing, so that a usage error is JSON too.
    let json = std::env::args_os().skip(1).any(|arg| arg == "--json");
    let cli = match cmd::parse() {
        Ok(cli) => cli,
        // Help and version are output, not errors; clap prints them (and its own usage
        // errors without --json) and exits with 0 or 2 (`exit::Status::Usage`).
        Err(e) if !json || !e.use_stderr() => e.exit(),
        Err(e) => {
            // clap's rendering is "error: ..." then tips and the usage: the first line says it.
            let text = e.to_string();
            let message = first_line(&text).trim_start_matches("error: ").trim();
            eprintln!(
                "{}",
                exit::json_error("usage", message, exit::Status::Usage, &[], None)
            );
            return exit::Status::Usage.into();
        }
    };
    match cmd::run(cli) {
        Ok(()) => exit::Status::Ok.into(),
        Err(err) if is_broken_pipe(&err) => exit::Status::Ok.into(),
        Err(err) => {
            let status = exit::status_of(&err);
            let violations = exit::violations_of(&err);
            if json {
                let message = format!("{err:#}");
                let position = exit::filter_position_of(&err);
                eprintln!(
                    "{}",
                    exit::json_error(&exit::code_of(&err), &message, status, violations, position)
                );
            } else {
                eprintln!("error: {err:#}");
                // Every failure, one per line, where the message names only the first few.
                for v in violations {
                    eprintln!("{}", exit::violation_line(v));
                }
                // An invalid filter, with a caret under where it went wrong.
                if let Some(excerpt) = exit::filter_excerpt(&err) {
                    eprintln!("{excerpt}");
                }
            }
            status.into()
        }
    }
}

/// The first line of clap's error (its own words, without the usage that follows).
fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or(text)
}

/// `pathdb ... | head` closes our stdout early; that is not a failure.
fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
