use super::*;
use axum::http::HeaderValue;

fn tags(list: &[(bool, &str)]) -> Option<TagList> {
    Some(TagList::Tags(
        list.iter()
            .map(|(weak, opaque)| EntityTag {
                weak: *weak,
                opaque: (*opaque).to_owned(),
            })
            .collect(),
    ))
}

#[test]
fn parses_star_lists_weak_tags_and_bare_versions() {
    assert_eq!(parse_tag_list(" * "), Some(TagList::Any));
    assert_eq!(parse_tag_list(r#""3""#), tags(&[(false, "3")]));
    assert_eq!(parse_tag_list(r#"W/"3""#), tags(&[(true, "3")]));
    assert_eq!(
        parse_tag_list(r#""1", W/"2" ,"x,y""#),
        tags(&[(false, "1"), (true, "2"), (false, "x,y")])
    );
    assert_eq!(parse_tag_list("7"), tags(&[(false, "7")]));
    assert_eq!(parse_tag_list("7, 8"), tags(&[(false, "7"), (false, "8")]));
}

#[test]
fn refuses_what_is_no_tag_list() {
    for text in [
        "",
        ",",
        "abc",
        r#""3"#,
        r#""3" "4""#,
        "W/3",
        "*, \"3\"",
        "3x",
    ] {
        assert_eq!(parse_tag_list(text), None, "{text:?}");
    }
}

fn headers(pairs: &[(HeaderName, &str)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in pairs {
        map.append(name, HeaderValue::from_str(value).expect("header value"));
    }
    map
}

#[test]
fn write_preconditions_compare_strongly() {
    let pre =
        |pairs: &[(HeaderName, &str)]| write_precondition(&headers(pairs)).map_err(|e| e.status());
    assert_eq!(pre(&[]), Ok(WritePrecondition::None));
    assert_eq!(
        pre(&[(header::IF_MATCH, "*")]),
        Ok(WritePrecondition::Store(Condition::MustExist))
    );
    assert_eq!(
        pre(&[(header::IF_NONE_MATCH, "*")]),
        Ok(WritePrecondition::Store(Condition::MustNotExist))
    );
    assert_eq!(
        pre(&[(header::IF_MATCH, r#""4""#)]),
        Ok(WritePrecondition::Store(Condition::IfVersion(4)))
    );
    assert_eq!(
        pre(&[(header::IF_MATCH, r#"W/"4""#)]),
        Ok(WritePrecondition::Never)
    );
    assert_eq!(
        pre(&[(header::IF_MATCH, r#""abc""#)]),
        Ok(WritePrecondition::Never)
    );
    // Two header lines are one list.
    assert_eq!(
        pre(&[
            (header::IF_MATCH, r#""5""#),
            (header::IF_MATCH, r#""4", W/"6""#)
        ]),
        Ok(WritePrecondition::AnyVersion(vec![4, 5]))
    );
    let bad = Err(axum::http::StatusCode::BAD_REQUEST);
    assert_eq!(pre(&[(header::IF_NONE_MATCH, r#""4""#)]), bad);
    assert_eq!(pre(&[(header::IF_MATCH, "nope")]), bad);
    // Both headers: the item would have to exist and not exist.
    assert_eq!(
        pre(&[(header::IF_MATCH, "*"), (header::IF_NONE_MATCH, "*")]),
        Ok(WritePrecondition::Never)
    );
    assert_eq!(
        pre(&[(header::IF_MATCH, "*"), (header::IF_NONE_MATCH, r#""1""#)]),
        bad
    );
}

#[test]
fn several_versions_resolve_against_the_current_one() {
    let any = WritePrecondition::AnyVersion(vec![2, 3]);
    assert_eq!(
        any.clone().resolve(|| Ok(Some(3))).map_err(|e| e.status()),
        Ok(Some(Condition::IfVersion(3)))
    );
    let failed = Err(axum::http::StatusCode::PRECONDITION_FAILED);
    assert_eq!(
        any.clone().resolve(|| Ok(Some(4))).map_err(|e| e.status()),
        failed
    );
    assert_eq!(any.resolve(|| Ok(None)).map_err(|e| e.status()), failed);
    assert_eq!(
        WritePrecondition::Never
            .resolve(|| unreachable!())
            .map_err(|e| e.status()),
        failed
    );
}

#[test]
fn if_none_match_compares_weakly() {
    let check = |value: &str, version| {
        not_modified(&headers(&[(header::IF_NONE_MATCH, value)]), version).map_err(|e| e.status())
    };
    assert_eq!(check(r#""3""#, 3), Ok(true));
    assert_eq!(check(r#"W/"3""#, 3), Ok(true));
    assert_eq!(check(r#""1", "3""#, 3), Ok(true));
    assert_eq!(check("*", 3), Ok(true));
    assert_eq!(check(r#""2""#, 3), Ok(false));
    assert_eq!(
        not_modified(&HeaderMap::new(), 3).map_err(|e| e.status()),
        Ok(false)
    );
    assert_eq!(
        check("garbage", 3),
        Err(axum::http::StatusCode::BAD_REQUEST)
    );
}
