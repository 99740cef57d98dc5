"""The web console in a real headless browser (Debian's Chromium through its WebDriver, driven
by selenium), against a real `lucille serve` with a token: the token is asked for once, a
config is written in the editor, a validation error shows at its key, the fix starts a run whose
counts reach the end, its failures are listed, a slow run is cancelled, a schedule is created.

Screenshots of each page are written to LUCILLE_CONSOLE_SCREENSHOTS when it is set (the ones in
docs/images/ come from `LUCILLE_CONSOLE_SCREENSHOTS=docs/images pytest tests/python/test_console.py`)."""

from __future__ import annotations

import os
import pathlib
import time
from typing import Any, Callable

import pytest

from service_process import Service, write_stages
from services import service_env

TOKEN = "console-t0ken"


@pytest.fixture
def browser() -> Any:
    chromium = service_env("LUCILLE_TEST_CHROMIUM", "chromium.sh")
    driver_path = service_env("LUCILLE_TEST_CHROMEDRIVER", "chromium.sh")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service as DriverService
    except ImportError:
        pytest.fail("selenium is not installed (scripts/test.sh installs it)")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,900",
                "--disable-gpu"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=DriverService(executable_path=driver_path), options=options)
    driver.implicitly_wait(0)
    yield driver
    driver.quit()


def wait_for(what: Callable[[], Any], timeout: float = 60, message: str = "") -> Any:
    deadline = time.time() + timeout
    last: Any = None
    while time.time() < deadline:
        try:
            last = what()
            if last:
                return last
        except Exception as e:  # noqa: BLE001: an element not there yet
            last = e
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {message or what}: {last!r}")


def shot(driver: Any, name: str) -> None:
    folder = os.environ.get("LUCILLE_CONSOLE_SCREENSHOTS")
    if folder:
        pathlib.Path(folder).mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(pathlib.Path(folder) / f"console-{name}.png"))


def config(docs: int, key: str = "staticValues", extra: str = "", out: str = "out.jsonl") -> str:
    """Paths relative to the service's working folder; the stages module on its PYTHONPATH."""
    return f"""connectors: [
  {{ name: "numbers", class: "SequenceConnector", numDocs: {docs}, docIdPrefix: "doc-", pipeline: "enrich" }}
]
pipelines: [
  {{ name: "enrich", stages: [
    {{ name: "mark", class: "SetStaticValues", {key}: {{ source: "console" }} }}
    {{ name: "check", class: "service_stages:Flaky", every: 10, fixed: "fixed.flag" }}
    {extra}
  ] }}
]
indexer {{ type: "jsonl" }}
jsonl {{ path: "{out}" }}
worker {{ threads: 2 }}
"""


def test_the_console_end_to_end(tmp_path: pathlib.Path, browser: Any) -> None:
    from selenium.webdriver.common.by import By

    write_stages(tmp_path)
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN)
    with Service(tmp_path / "data", "--token-file", str(token_file), token=TOKEN, cwd=tmp_path,
                 env={"PYTHONPATH": str(tmp_path)}) as svc:
        d = browser
        d.get(svc.url + "/")
        # The first API call is refused: the console asks for the token, once.
        dialog = wait_for(lambda: d.find_element(By.ID, "token-dialog").get_attribute("open") is not None
                          and d.find_element(By.ID, "token-dialog"), message="the token dialog")
        assert dialog.find_element(By.CSS_SELECTOR, "label[for=token-input]").text == "Token"
        d.find_element(By.ID, "token-input").send_keys(TOKEN)
        d.find_element(By.ID, "token-save").click()
        wait_for(lambda: "No runs yet" in d.find_element(By.ID, "runs-table").text, message="runs list")

        # A new run: the editor validates as it is typed; the error shows at its key path.
        d.find_element(By.ID, "nav-new").click()
        area = wait_for(lambda: d.find_element(By.ID, "new-config"))
        bad = config(200, key="staticValuez")
        d.execute_script("arguments[0].value = arguments[1];", area, bad[:-2])
        area.send_keys(bad[-2:])  # typed: the editor's input event fires
        problem = wait_for(lambda: [li for li in d.find_elements(By.CSS_SELECTOR, "#new-errors li")
                                    if "staticValuez" in li.text], message="the error at its key")[0]
        assert problem.get_attribute("data-path") == "pipelines[0].stages[0].staticValuez"
        assert 'did you mean "staticValues"?' in problem.text
        assert "line 6" in problem.text, problem.text  # the line the key is on
        assert "error" in d.find_element(By.ID, "new-status").text
        shot(d, "new-run")
        fixed = config(200)
        d.execute_script("arguments[0].value = arguments[1];", area, fixed[:-1])
        area.send_keys(fixed[-1:])
        wait_for(lambda: d.find_element(By.ID, "new-status").text == "The config is valid.",
                 message="the config valid")
        assert d.find_elements(By.CSS_SELECTOR, "#new-errors li") == []
        d.find_element(By.ID, "new-name").send_keys("numbers from the console")
        d.find_element(By.ID, "new-start").click()

        # Its page: counts reach the end, stages and failures are listed.
        wait_for(lambda: "#/runs/" in d.current_url, message="the run page")
        run_id = d.current_url.rsplit("/", 1)[1]
        # 20 documents FAILed and every connector completed: "partial", a badge of its own.
        wait_for(lambda: d.find_element(By.ID, "run-state").text == "partial", message="partial")
        badge = d.find_element(By.ID, "run-state")
        assert "state-partial" in (badge.get_attribute("class") or "").split()
        colour = badge.value_of_css_property("background-color")
        # Neither the succeeded badge's green nor the failed one's red (style.css), nor none.
        assert colour not in {"rgba(226, 243, 232, 1)", "rgba(251, 229, 227, 1)",
                              "rgba(0, 0, 0, 0)"}, colour
        counts = {k: d.find_element(By.ID, f"count-{k}").text
                  for k in ("published", "succeeded", "failed", "dropped", "unchanged")}
        assert counts == {"published": "200", "succeeded": "180", "failed": "20", "dropped": "0",
                          "unchanged": "0"}
        assert counts == {k: str(v) for k, v in svc.run(run_id)["counts"].items()}
        stage_rows = d.find_elements(By.CSS_SELECTOR, "#run-stages tbody tr")
        assert [r.find_elements(By.TAG_NAME, "td")[1].text for r in stage_rows] == ["mark", "check"]
        wait_for(lambda: d.find_element(By.ID, "failures-title").text == "Failures (20)", message="failures")
        failure_rows = d.find_elements(By.CSS_SELECTOR, "#run-failures tbody tr")
        assert len(failure_rows) == 20
        first = failure_rows[0].find_elements(By.TAG_NAME, "td")
        assert first[1].text == "check" and "stage \"check\" failed" in first[2].text
        reason = first[2].find_element(By.CLASS_NAME, "reason").get_attribute("title")
        assert "is not wanted" in reason, reason
        assert d.find_element(By.ID, "run-cancel").get_attribute("disabled") is not None
        assert d.find_element(By.ID, "run-replay").get_attribute("disabled") is None
        shot(d, "run")

        # Replay its failures from the page: a new run of exactly those 20 documents (they fail
        # again: the stage is not fixed), linked to the first.
        d.find_element(By.ID, "run-replay").click()
        wait_for(lambda: run_id not in d.current_url, message="the replay's page")
        replay_id = d.current_url.rsplit("/", 1)[1]
        # Every one of its documents FAILed again, but its connector completed: "partial".
        wait_for(lambda: d.find_element(By.ID, "run-state").text == "partial", message="replayed")
        assert d.find_element(By.ID, "count-published").text == "20"
        assert d.find_element(By.ID, "count-failed").text == "20"
        assert f"replay of {run_id}" in d.find_element(By.ID, "run-times").text
        assert svc.run(replay_id)["replayOf"] == run_id

        # A slow run, cancelled from its page.
        slow = config(3000, extra='{ class: "service_stages:Slow", seconds: 0.02 }',
                      out="slow.jsonl") + "publisher { queueCapacity: 20 }\n"
        slow_id = svc.submit(slow, name="slow")
        d.get(f"{svc.url}/#/runs/{slow_id}")
        wait_for(lambda: d.find_element(By.ID, "run-state").text == "running", message="running")
        wait_for(lambda: int(d.find_element(By.ID, "count-succeeded").text.replace(",", "")) > 0,
                 message="counts moving")
        shot(d, "run-live")
        d.find_element(By.ID, "run-cancel").click()
        wait_for(lambda: d.find_element(By.ID, "run-state").text == "cancelled", message="cancelled")
        assert "drains" in d.find_element(By.ID, "run-action").text

        # The runs list.
        d.find_element(By.ID, "nav-runs").click()
        wait_for(lambda: len(d.find_elements(By.CSS_SELECTOR, "#runs-table tbody tr a")) == 3, message="3 runs")
        names = [a.text for a in d.find_elements(By.CSS_SELECTOR, "#runs-table tbody tr a")]
        assert names == ["slow", "replay of numbers from the console", "numbers from the console"]
        shot(d, "runs")

        # Schedules: one created from the form.
        d.find_element(By.ID, "nav-schedules").click()
        wait_for(lambda: "No schedules" in d.find_element(By.ID, "schedules-table").text, message="schedules")
        d.find_element(By.ID, "sched-name").send_keys("hourly numbers")
        d.find_element(By.ID, "sched-cron").send_keys("0 * * * *")
        d.execute_script("arguments[0].value = arguments[1];", d.find_element(By.ID, "sched-config"),
                         config(10, out="hourly.jsonl"))
        d.find_element(By.ID, "sched-create").click()
        wait_for(lambda: "hourly numbers" in d.find_element(By.ID, "schedules-table").text, message="the schedule")
        assert "cron 0 * * * *" in d.find_element(By.ID, "schedules-table").text
        assert [s["name"] for s in svc.ok("GET", "/api/schedules")["schedules"]] == ["hourly numbers"]
        shot(d, "schedules")

        # Everything the page loaded came from this server: no CDN, nothing else fetched.
        urls = d.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
        assert urls and all(u.startswith(svc.url) for u in urls), urls
        logs = [e for e in d.get_log("browser") if e["level"] == "SEVERE" and "401" not in e["message"]]
        assert logs == [], logs
