use super::*;

#[test]
fn the_default_cap_leaves_files_for_the_rest_of_the_server() {
    // The usual soft limit: a quarter kept back.
    assert_eq!(default_max_connections(Some(1024)), 768);
    // A small limit keeps at least 64 files back, and at least one connection.
    assert_eq!(default_max_connections(Some(256)), 192);
    assert_eq!(default_max_connections(Some(64)), 1);
    // A large one keeps 4,096 back and is capped for memory's sake.
    assert_eq!(connections_within(Some(20_000)), 15_904);
    assert_eq!(default_max_connections(Some(20_000)), 15_904);
    assert_eq!(
        default_max_connections(Some(1 << 20)),
        MAX_DEFAULT_CONNECTIONS
    );
    assert_eq!(default_max_connections(None), 768);
}
