use super::Lines;
use tokio::sync::mpsc;

/// The lines `Lines` gives for `chunks`.
fn lines(chunks: &[&[u8]]) -> Vec<Result<String, String>> {
    let (tx, rx) = mpsc::channel(chunks.len().max(1));
    for chunk in chunks {
        tx.try_send(axum::body::Bytes::copy_from_slice(chunk))
            .unwrap();
    }
    drop(tx);
    Lines::new(rx).collect()
}

#[test]
fn splits_as_str_lines_does_whatever_the_chunks() {
    let text = "a\r\n\nbc\nd\r\ne";
    let expected: Vec<Result<String, String>> = text.lines().map(|l| Ok(l.to_owned())).collect();
    // Every way of cutting the text in two or three chunks.
    for i in 0..=text.len() {
        for j in i..=text.len() {
            let b = text.as_bytes();
            assert_eq!(
                lines(&[&b[..i], &b[i..j], &b[j..]]),
                expected,
                "cut at {i} and {j}"
            );
        }
    }
    assert_eq!(lines(&[b"x\n"]), vec![Ok("x".to_owned())]);
    assert!(lines(&[]).is_empty());
}

#[test]
fn a_line_that_is_not_utf8_is_named_and_the_others_still_read() {
    let got = lines(&[b"ok\n\xff\xfe\n", b"\xc3", b"\xa9\n"]);
    assert_eq!(got[0], Ok("ok".to_owned()));
    assert_eq!(
        got[1],
        Err("the line is not UTF-8 (an invalid byte at column 1)".to_owned())
    );
    // A character split across chunks is whole again.
    assert_eq!(got[2], Ok("é".to_owned()));
}
