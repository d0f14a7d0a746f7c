//! The retry loops on scripted attempts: what is retried, what ends a request, and which kind
//! an exhausted budget reports.

use super::*;
use std::cell::RefCell;
use std::collections::VecDeque;

fn budget(max_attempts: u32) -> RetryBudget {
    RetryBudget {
        max_attempts,
        initial_backoff: Duration::ZERO,
        max_backoff: Duration::ZERO,
        ..RetryBudget::default()
    }
}

fn failed(class: Class) -> Attempt {
    Attempt::Failed(Failure {
        class,
        error: StorageError::msg(format!("{class:?}")),
        code: None,
        timed_out: false,
    })
}

/// Runs the write loop over `script` (one entry per attempt); answers how it ended and how many
/// attempts it made.
fn run_write(max_attempts: u32, script: Vec<Attempt>) -> (Sent, usize) {
    let script = RefCell::new(VecDeque::from(script));
    let attempts = RefCell::new(0);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("runtime");
    let sent = runtime.block_on(write(
        &budget(max_attempts),
        &Metrics::default(),
        "TransactWriteItems",
        || {
            *attempts.borrow_mut() += 1;
            let next = script.borrow_mut().pop_front().expect("script long enough");
            async move { next }
        },
    ));
    (sent, attempts.into_inner())
}

#[test]
fn backoff_stays_under_its_doubling_ceiling() {
    let budget = RetryBudget::default();
    for retry in 1..12 {
        let ceiling = (budget.initial_backoff * (1 << (retry - 1))).min(budget.max_backoff);
        for _ in 0..50 {
            assert!(budget.backoff(retry) <= ceiling, "retry {retry}");
        }
    }
}

#[test]
fn refusals_are_retried_until_the_write_applies() {
    let (sent, attempts) = run_write(
        4,
        vec![
            failed(Class::Refused),
            failed(Class::Refused),
            Attempt::Applied,
        ],
    );
    assert!(matches!(sent, Sent::Applied), "{sent:?}");
    assert_eq!(attempts, 3);
}

#[test]
fn refusals_past_the_budget_are_unavailable() {
    let (sent, attempts) = run_write(3, (0..3).map(|_| failed(Class::Refused)).collect());
    let Sent::Failed(error) = sent else {
        panic!("{sent:?}")
    };
    assert_eq!(error.kind(), StorageErrorKind::Unavailable);
    assert!(
        error.message().contains("gave up after 3 attempts"),
        "{error}"
    );
    assert_eq!(attempts, 3);
}

#[test]
fn a_lost_answer_makes_an_exhausted_write_lost_not_failed() {
    let (sent, _) = run_write(
        3,
        vec![
            failed(Class::MaybeApplied),
            failed(Class::Refused),
            failed(Class::Refused),
        ],
    );
    assert!(matches!(sent, Sent::Lost(_)), "{sent:?}");
}

#[test]
fn a_condition_failing_after_a_lost_answer_says_so() {
    let (sent, _) = run_write(
        4,
        vec![failed(Class::MaybeApplied), Attempt::ConditionFailed(1)],
    );
    assert!(
        matches!(
            sent,
            Sent::ConditionFailed {
                index: 1,
                after_lost_answer: true
            }
        ),
        "{sent:?}"
    );
    let (sent, _) = run_write(4, vec![Attempt::ConditionFailed(0)]);
    assert!(
        matches!(
            sent,
            Sent::ConditionFailed {
                index: 0,
                after_lost_answer: false
            }
        ),
        "{sent:?}"
    );
}

#[test]
fn a_conflict_after_a_lost_answer_is_retried() {
    // The transaction it conflicted with may be this write's own first attempt.
    let (sent, attempts) = run_write(
        4,
        vec![
            failed(Class::MaybeApplied),
            Attempt::Conflict(0),
            Attempt::Applied,
        ],
    );
    assert!(matches!(sent, Sent::Applied), "{sent:?}");
    assert_eq!(attempts, 3);
    let (sent, _) = run_write(4, vec![Attempt::Conflict(2)]);
    assert!(matches!(sent, Sent::Conflict(2)), "{sent:?}");
}

#[test]
fn a_rejection_is_not_retried() {
    let (sent, attempts) = run_write(4, vec![failed(Class::Rejected)]);
    let Sent::Failed(error) = sent else {
        panic!("{sent:?}")
    };
    assert_eq!(error.kind(), StorageErrorKind::Other);
    assert_eq!(attempts, 1);
}

#[test]
fn reads_past_the_budget_are_unavailable_whatever_failed() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("runtime");
    for class in [Class::Refused, Class::MaybeApplied] {
        let attempts = RefCell::new(0);
        let result: Result<(), Failure> =
            runtime.block_on(read(&budget(3), &Metrics::default(), "GetItem", || {
                *attempts.borrow_mut() += 1;
                async move {
                    Err(Failure {
                        class,
                        error: StorageError::msg("no"),
                        code: None,
                        timed_out: false,
                    })
                }
            }));
        let failure = result.expect_err("never succeeds");
        assert_eq!(failure.error.kind(), StorageErrorKind::Unavailable);
        assert_eq!(attempts.into_inner(), 3);
    }
}

/// A page the endpoint cannot answer in time above `slow_above` items.
fn timed_out_above(slow_above: u32, limit: u32) -> Result<u32, Failure> {
    if limit > slow_above {
        Err(Failure {
            class: Class::MaybeApplied,
            error: StorageError::msg("no answer within the attempt timeout"),
            code: None,
            timed_out: true,
        })
    } else {
        Ok(limit)
    }
}

/// A runtime, a page size of at most 1,000, counters, and a log of the `Limit`s asked.
fn paged_read() -> (
    tokio::runtime::Runtime,
    crate::paging::PageSize,
    Metrics,
    RefCell<Vec<u32>>,
) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("runtime");
    let size = crate::paging::PageSize::new(1000);
    (runtime, size, Metrics::default(), RefCell::new(Vec::new()))
}

#[test]
fn a_page_that_times_out_is_asked_again_smaller_until_it_is_answered() {
    let (runtime, size, metrics, asked) = paged_read();
    // Two attempts per budget: more timeouts than that at one size would fail the page, so the
    // page succeeds only because each smaller size gets a budget of its own.
    let result = runtime.block_on(read_page(
        &budget(2),
        &metrics,
        "Scan",
        &size,
        1000,
        |limit| {
            asked.borrow_mut().push(limit);
            async move { timed_out_above(100, limit) }
        },
    ));
    let answer = result.unwrap_or_else(|f| panic!("{}", f.error));
    assert_eq!(answer, 62);
    assert_eq!(*asked.borrow(), [1000, 500, 250, 125, 62]);
    assert_eq!(metrics.counts().page_shrinks, 4);
    // Each page asked again is an attempt after the first.
    assert_eq!(metrics.counts().retries, 4);
    // The next page starts at the size that worked.
    assert_eq!(size.limit(1000), 62);
}

#[test]
fn a_page_that_times_out_at_the_floor_fails_within_the_budget() {
    let (runtime, size, metrics, asked) = paged_read();
    let result = runtime.block_on(read_page(
        &budget(3),
        &metrics,
        "Query",
        &size,
        40,
        |limit| {
            asked.borrow_mut().push(limit);
            async move { timed_out_above(0, limit) }
        },
    ));
    let failure = result.expect_err("never answered");
    assert_eq!(
        failure.error.kind(),
        pathdb_store::StorageErrorKind::Unavailable
    );
    // 40 -> 20 -> 16 (the floor), then the budget's three attempts at the floor.
    assert_eq!(*asked.borrow(), [40, 20, 16, 16, 16]);
    assert!(
        failure
            .error
            .to_string()
            .contains("gave up after 3 attempts"),
        "{}",
        failure.error
    );
}
