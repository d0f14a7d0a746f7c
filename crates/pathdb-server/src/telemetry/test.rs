use super::*;

/// Samples a thread gathered are in `/metrics` after `fold_all`, also when the thread has ended
/// before folding them itself, and never twice.
#[test]
fn gathered_samples_are_folded_once_whether_or_not_their_thread_ended() {
    let Some(handle) = prometheus() else {
        panic!("the test process has no other recorder");
    };
    let count = |op: &str| {
        let line = format!("pathdb_store_operations_total{{op=\"{op}\",outcome=\"ok\"}} ");
        handle
            .render()
            .lines()
            .find_map(|l| l.strip_prefix(&line).map(str::to_owned))
            .unwrap_or_default()
    };
    std::thread::spawn(|| {
        for _ in 0..3 {
            store_operation("test-ended", Instant::now(), true);
        }
    })
    .join()
    .unwrap();
    let (gathered, fold) = std::sync::mpsc::channel();
    let (folded, done) = std::sync::mpsc::channel::<()>();
    let live = std::thread::spawn(move || {
        for _ in 0..FOLD_EVERY + 2 {
            store_operation("test-live", Instant::now(), true);
        }
        gathered.send(()).unwrap();
        // Still running while another thread folds its samples in.
        done.recv().unwrap();
    });
    fold.recv().unwrap();
    // FOLD_EVERY samples were folded by the thread itself, the other 2 wait (unless a test
    // running beside this one rendered `/metrics` meanwhile).
    let folded_itself: usize = count("test-live").parse().unwrap();
    assert!(folded_itself >= FOLD_EVERY, "{folded_itself}");
    fold_all();
    assert_eq!(count("test-ended"), "3");
    assert_eq!(count("test-live"), (FOLD_EVERY + 2).to_string());
    fold_all();
    assert_eq!(count("test-live"), (FOLD_EVERY + 2).to_string());
    folded.send(()).unwrap();
    live.join().unwrap();
}
