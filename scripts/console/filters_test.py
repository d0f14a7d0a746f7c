"""Browser test of the filter box of a listing (`GET /v1/list/{prefix}?filter=&fields=&max_scan=`):
a valid filter narrows the rows and each page says how many items it read; a page that read its
most and matched nothing says that more follow, and "Next" reads on; an invalid filter is said
under the box with the character the server names marked. It runs after console_test.py's own
tests, with its driver and helpers (one Chromium for all files).

It needs at least 300 children under /big-1 (n-1, n-2, ... holding {"i": n}), as both backends'
runs seed, and the leaderboard and the user tree of seed.py.
"""

from selenium.webdriver.common.by import By

from console_test import (N, RW, URL, by_id, children, driver, ensure_accounts, links, n_children, open_page,
                          rendered_at, screenshot, shown, wait, wait_rendered_after)

TOKEN_KEY = "pathdb.token"  # where the console keeps its token (app.js)


def apply_listing(**boxes):
    """Fills the listing form's boxes (filter, fields, max-scan: None leaves one as it is, "" empties
    it), applies it, and waits for the new page (or the filter's error) to render."""
    for name, text in boxes.items():
        if text is None:
            continue
        box = by_id(name.replace("_", "-"))
        box.clear()
        box.send_keys(text)
    before = rendered_at()
    by_id("apply").click()
    wait_rendered_after(before)


def marked():
    return driver.execute_script(
        "return [...document.querySelectorAll('#filter-error-text mark')].map(m => [m.textContent, m.className])")


def page_info():
    return by_id("page-info").text


def test_a_filter_narrows_a_listing_says_what_it_read_and_where_it_is_invalid():
    # Signed in with the read-write token (the sign-in form is another test's).
    driver.get(URL + "/ui/.console/style.css")
    driver.execute_script("sessionStorage.setItem(arguments[0], arguments[1])", TOKEN_KEY, RW)
    open_page("/ui/big-1")
    wait.until(lambda d: n_children() == 100)
    assert page_info() == "page 1 · 100 shown · scanned 100", page_info()

    # A valid filter narrows the rows; the page says how many items it read to find them (at most
    # 1,000 a page, the server's default).
    apply_listing(filter="value.i <= 3")
    assert children() == ["/big-1/n-1", "/big-1/n-2", "/big-1/n-3"], children()
    assert "filter=value.i" in driver.current_url, driver.current_url
    read = min(N, 1000)
    assert page_info() == f"page 1 · 3 shown · scanned {read:,}", page_info()
    assert by_id("next").is_enabled() == (N > 1000)
    assert not by_id("filter-error").is_displayed() and not by_id("error").is_displayed()
    # The equivalent request carries the filter.
    assert "filter=value.i+%3C%3D+3" in by_id("eq-curl").text, by_id("eq-curl").text

    # At most 100 items read a page: the first page reads n-1 to n-100 and matches none. It is not
    # the end: it says so, and "Next" reads on to the matches.
    apply_listing(filter="value.i >= 150 && value.i < 160", max_scan="100")
    assert children() == []
    assert shown("children-empty").text == "No matches in the 100 items read; more follow.", by_id("children-empty").text
    assert page_info() == "page 1 · 0 shown · scanned 100", page_info()
    assert by_id("next").is_enabled()
    before = rendered_at()
    by_id("next").click()
    wait_rendered_after(before)
    assert children() == [f"/big-1/n-{i}" for i in range(150, 160)], children()
    assert page_info() == "page 2 · 10 shown · scanned 100", page_info()
    assert not by_id("children-empty").is_displayed()
    # Back to the empty page, and on to the last: n-201 to n-300 match none, and nothing follows
    # when /big-1 ends there.
    before = rendered_at()
    by_id("prev").click()
    wait_rendered_after(before)
    assert children() == [] and by_id("children-empty").text == "No matches in the 100 items read; more follow."
    for _ in range(2):
        before = rendered_at()
        by_id("next").click()
        wait_rendered_after(before)
    assert children() == [] and page_info() == "page 3 · 0 shown · scanned 100", (children(), page_info())
    assert by_id("children-empty").text == ("No matches in the 100 items read; more follow." if N > 300
                                            else "No matches in the 100 items read."), by_id("children-empty").text
    assert by_id("next").is_enabled() == (N > 300)

    # An invalid filter: the server's message under the box, the filter with the character at the
    # position it names marked (and selected in the box), no rows, and no error panel.
    apply_listing(filter="value.i > 1 && nope.x", max_scan="")
    shown("filter-error")
    message = by_id("filter-error-message").text
    assert message.startswith("invalid filter at character 15:") and "nope" in message, message
    assert by_id("filter-error").get_attribute("data-position") == "15"
    assert by_id("filter-error-text").text == "value.i > 1 && nope.x", by_id("filter-error-text").text
    assert marked() == [["n", ""]], marked()
    assert by_id("filter").get_attribute("aria-invalid") == "true"
    assert driver.execute_script(
        "const f = document.getElementById('filter'); return [document.activeElement === f, f.selectionStart, f.selectionEnd]"
    ) == [True, 15, 16]
    assert children() == [] and not by_id("children-empty").is_displayed() and not by_id("next").is_enabled()
    assert page_info() == "" and not by_id("error").is_displayed()
    # A syntax error: the character the parser stopped at (the second `>`).
    apply_listing(filter="value.i > > 1")
    wait.until(lambda d: by_id("filter-error").get_attribute("data-position") == "10")
    assert marked() == [[">", ""]], marked()
    # A filter that ends too soon: marked at its end.
    apply_listing(filter="value.i ==")
    shown("filter-error")
    position = int(by_id("filter-error").get_attribute("data-position"))
    assert position == len("value.i =="), (position, by_id("filter-error-message").text)
    assert marked() == [[" ", "end"]], marked()
    # Fixed: the error goes, the rows come.
    apply_listing(filter="value.i == 7")
    assert children() == ["/big-1/n-7"] and not by_id("filter-error").is_displayed()
    assert by_id("filter").get_attribute("aria-invalid") is None

    # The whole subtree, not only the children: a grandchild matches.
    open_page("/ui/user-7")
    wait.until(lambda d: "/user-7/post-10" in children())
    by_id("list-subtree").click()
    apply_listing(filter="has(value.text)")
    assert children() == ["/user-7/post-2/comment-1"], children()
    assert by_id("children-title").text == "Subtree" and "subtree=true" in driver.current_url
    assert "children=true" not in by_id("eq-curl").text

    # An alias prefix's listing: the filter reads each item's value.
    ensure_accounts()
    open_page("/ui/plan-pro?filter=" + "value.handle%20%3D%3D%20%22ada%22")
    wait.until(lambda d: children() == ["/plan-pro/account-1"])
    assert links("#children a.own") == ["/account-1"] and by_id("filter").get_attribute("value") == 'value.handle == "ada"'

    # Fields: each value as projected, beside its path (the leaderboard, scores descending).
    open_page("/ui/season-2026-spring")
    wait.until(lambda d: len(children()) == 5)
    apply_listing(filter="value.score > 1000", fields="player")
    assert children() == ["/season-2026-spring/score-!2300", "/season-2026-spring/score-!1720",
                          "/season-2026-spring/score-!1500"], children()
    shown_fields = [e.text for e in driver.find_elements(By.CSS_SELECTOR, "#children code.fields")]
    assert shown_fields == ['{"player":"linus"}', '{"player":"barbara"}', '{"player":"ada"}'], shown_fields
    assert page_info() == "page 1 · 3 shown · scanned 5", page_info()
    assert "fields=player" in by_id("eq-curl").text
    screenshot("filters")


TESTS = [test_a_filter_narrows_a_listing_says_what_it_read_and_where_it_is_invalid]
