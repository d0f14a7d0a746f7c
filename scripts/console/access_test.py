"""Browser test of access control in the console (issue 47): the Roles & tokens page of an
admin, and what a token with a custom role sees. console_test.py runs it after its own tests,
with its driver and helpers (one Chromium for both files).
"""

import json

from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

from console_test import ADMIN, api, by_id, driver, open_page, screenshot, shown, sign_in, status_of, wait

RULE = "/team-{team}/** read, write — team = 7"


def role_rows():
    return driver.execute_script(
        "return [...document.querySelectorAll('#role-rows tr')].map(tr => [tr.dataset.role,"
        " !!tr.querySelector('.builtin'), !!tr.querySelector('.edit-role')])")


def test_roles_and_tokens_then_what_a_team_token_may_do():
    api("PUT", "/v1/items/team-8/doc-1", {"title": "theirs"})
    sign_in(ADMIN)
    by_id("nav-access").click()
    wait.until(lambda d: d.current_url.endswith("/ui/.access"))
    shown("access-page")
    wait.until(lambda d: ["admin", True, False] in role_rows())
    assert ["read", True, False] in role_rows() and ["read-write", True, False] in role_rows(), role_rows()
    # A new role: admin on a team's paths is refused (422 invalid_role), beside the form and its row.
    by_id("role-new").click()
    by_id("role-name").send_keys("member")
    by_id("role-description").send_keys("the members of one team")
    row = driver.find_element(By.CSS_SELECTOR, "#rule-rows tr")
    row.find_element(By.CSS_SELECTOR, ".rule-path").send_keys("/team-{team}/**")
    row.find_element(By.CSS_SELECTOR, ".allow-admin").click()
    by_id("role-save").click()
    wait.until(lambda d: "only on `/**`" in by_id("role-error-message").text)
    assert "bad" in row.get_attribute("class") and status_of("GET", "/v1/roles/member", ADMIN) == 404
    row.find_element(By.CSS_SELECTOR, ".allow-admin").click()
    row.find_element(By.CSS_SELECTOR, ".allow-write").click()
    by_id("role-save").click()
    wait.until(lambda d: ["member", False, True] in role_rows())
    assert not by_id("role-form").is_displayed()
    assert api("GET", "/v1/roles/member", token=ADMIN)["rules"] == [
        {"path": "/team-{team}/**", "allow": ["read", "write"]}]
    # A token of that role: the var row follows the role's template; 7 goes as a number.
    Select(by_id("token-role")).select_by_visible_text("member")
    wait.until(lambda d: [i.get_attribute("value") for i in d.find_elements(By.CSS_SELECTOR, "#var-rows .var-name")] == ["team"])
    driver.find_element(By.CSS_SELECTOR, "#var-rows .var-value").send_keys("7")
    by_id("token-description").send_keys("team 7's robot")
    by_id("token-create").click()
    secret = shown("token-secret").text
    assert secret.startswith("pdb_"), secret
    assert "will not be shown again" in by_id("token-created").text
    wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#token-rows tr")) == 1)
    row = driver.find_element(By.CSS_SELECTOR, "#token-rows tr").text
    assert "member" in row and "team = 7" in row and secret not in row, row
    [token] = api("GET", "/v1/tokens", token=ADMIN)["tokens"]
    assert token["vars"] == {"team": 7} and token["description"] == "team 7's robot", token
    screenshot("access")
    by_id("token-created-done").click()
    assert secret not in driver.page_source
    # Signed in with it: what it may do, on sign-in and in the bar; no Roles & tokens for it.
    api("PUT", "/v1/items/team-7/doc-1", {"title": "ours"}, token=secret)
    sign_in(secret)
    wait.until(lambda d: RULE in by_id("notice").text)
    assert "member" in by_id("notice").text, by_id("notice").text
    assert by_id("scope").text == "member token" and not by_id("nav-access").is_displayed()
    by_id("scope").click()
    assert RULE in shown("session-panel").text, by_id("session-panel").text
    open_page("/ui/team-7/doc-1")
    wait.until(lambda d: by_id("item").is_displayed() and json.loads(by_id("value").text) == {"title": "ours"})
    assert by_id("edit").is_displayed() and not by_id("error").is_displayed()
    # Another team's item: the 403 as a sentence, not a dump.
    open_page("/ui/team-8/doc-1")
    message = shown("error").text
    assert "This token may not read /team-8/doc-1." in message and "{\"" not in message, message
    assert not by_id("item").is_displayed()
    # Back as admin: revoke it (after a confirm); it is refused at once.
    sign_in(ADMIN)
    open_page("/ui/.access")
    driver.find_element(By.CSS_SELECTOR, f"#token-rows tr[data-token='{token['id']}'] button.revoke").click()
    shown("confirm-token-revoke")
    by_id("token-revoke-yes").click()
    wait.until(lambda d: by_id("token-empty").is_displayed())
    assert status_of("GET", "/v1/session", secret) == 401


TESTS = [test_roles_and_tokens_then_what_a_team_token_may_do]
