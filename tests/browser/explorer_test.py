"""The explorer as a person uses it (run by .ci/run): headless Chromium opens the page, reads the
numbers, moves the HBM-bandwidth slider and checks that the numbers and the chart change, runs a
sweep, unticks "search" and keeps the layout found, sees an error replace the numbers, runs the
serving search, and saves screenshots at a desktop and a phone width.
Usage: explorer_test.py BINARY SCREENSHOT.png (the phone-width one beside it, -narrow.png)"""
import re
import subprocess
import sys
import time

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait


def main(binary: str, screenshot: str) -> int:
    server = subprocess.Popen([binary, "explore", "--port", "0"], stdout=subprocess.PIPE, text=True)
    try:
        url = re.search(r"http://\S+/", server.stdout.readline()).group(0)
        opts = Options()
        for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1400,1100"):
            opts.add_argument(a)
        opts.binary_location = "/usr/bin/chromium"
        driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)
        try:
            return check(driver, url, screenshot)
        finally:
            driver.quit()
    finally:
        server.terminate()
        server.wait(timeout=10)


def check(driver, url: str, screenshot: str) -> int:
    wait = WebDriverWait(driver, 60)
    driver.get(url)
    wait.until(lambda d: d.execute_script("return window.explorer && window.explorer.updates >= 1"))
    assert driver.execute_script("return !!window.Chart"), "Chart.js did not load from /chart.js"
    step0 = driver.find_element(By.ID, "step_time").text
    compute0 = driver.execute_script("return window.explorer.last.breakdown.compute_s")
    bars0 = driver.execute_script("return window.explorer.charts.breakdown_chart.data.datasets.map(d => d.data[0])")
    assert step0 not in ("", "–"), "no step time shown"
    # A person drags the HBM bandwidth slider to x0.25: a search re-runs, memory-bound work slows.
    n = driver.execute_script("return window.explorer.updates")
    slider = driver.find_element(By.ID, "hbm_bw")
    driver.execute_script("arguments[0].value = -2; arguments[0].dispatchEvent(new Event('input'));", slider)
    wait.until(lambda d: d.execute_script("return window.explorer.updates") > n)
    step1 = driver.find_element(By.ID, "step_time").text
    bars1 = driver.execute_script("return window.explorer.charts.breakdown_chart.data.datasets.map(d => d.data[0])")
    over = driver.execute_script("return window.explorer.last")["memory"]
    assert step1 != step0, f"the step time did not change ({step0})"
    assert bars1 != bars0, "the breakdown chart did not change"
    assert driver.find_element(By.ID, "hbm_bw_out").text == "x0.250"
    compute1 = driver.execute_script("return window.explorer.last.breakdown.compute_s")
    assert compute1 >= compute0, f"less HBM bandwidth made compute faster: {compute0} -> {compute1}"
    assert over["capacity_bytes"] > 0
    # The JSON link points at what is shown.
    href = driver.find_element(By.ID, "json_link").get_attribute("href")
    assert href.startswith("blob:"), href
    # A sweep of the scale-out bandwidth draws its line.
    driver.find_element(By.ID, "run_sweep").click()
    wait.until(lambda d: d.execute_script("return !!(window.explorer.sweep && window.explorer.charts.sweep_chart)"))
    pts = driver.execute_script("return window.explorer.charts.sweep_chart.data.datasets[0].data")
    assert len(pts) == 4 and all(p is None or p > 0 for p in pts), pts
    # Unticking "search" runs the layout found, not the page's defaults: same layout, same GPUs.
    found = driver.execute_script("return window.explorer.last.parallel")
    gpus = driver.execute_script("return window.explorer.last.gpus")
    n = driver.execute_script("return window.explorer.updates")
    driver.find_element(By.ID, "search").click()
    wait.until(lambda d: d.execute_script("return window.explorer.updates") > n)
    mine = driver.execute_script("return window.explorer.last")
    for k in ("tp", "tp_rows", "pp", "dp", "cp", "ep", "vp", "microbatch", "zero", "recompute", "cp_kind", "order"):
        assert mine["parallel"][k] == found[k], (k, found, mine["parallel"])
    assert mine["gpus"] == gpus, (mine["gpus"], gpus)
    assert driver.find_element(By.ID, "layout_used").text.startswith("yours: ")
    # Bad input shows the CLI's one line, and no number of the last answer stays under it.
    driver.execute_script("const tp = document.getElementById('tp'); tp.value = 0; tp.dispatchEvent(new Event('input'));")
    wait.until(lambda d: not d.find_element(By.ID, "error").get_attribute("hidden"))
    err = driver.find_element(By.ID, "error").text
    assert "parallel.tp" in err, err
    for cell in ("step_time", "tok_gpu", "mfu", "memory", "layout_used"):
        assert driver.find_element(By.ID, cell).text == "–", (cell, driver.find_element(By.ID, cell).text)
    assert not driver.execute_script("return !!window.explorer.charts.breakdown_chart")
    driver.execute_script(f"const tp = document.getElementById('tp'); tp.value = {found['tp']}; tp.dispatchEvent(new Event('input'));")
    wait.until(lambda d: d.find_element(By.ID, "error").get_attribute("hidden"))
    # The serving search (on the preset's HBM bandwidth again): a best configuration under the
    # targets and the Pareto front.
    n = driver.execute_script("return window.explorer.updates")
    driver.execute_script("arguments[0].value = 0; arguments[0].dispatchEvent(new Event('input'));", slider)
    wait.until(lambda d: d.execute_script("return window.explorer.updates") > n)
    driver.find_element(By.ID, "run_serve").click()
    wait.until(lambda d: d.execute_script("return !!(window.explorer.serving && window.explorer.charts.pareto_chart)"))
    serving = driver.execute_script("return window.explorer.serving")
    rows = driver.find_elements(By.CSS_SELECTOR, "#serve_best tbody tr")
    assert serving["best"] and len(rows) == min(5, len(serving["best"])), (len(rows), len(serving["best"]))
    best = serving["best"][0]
    assert best["ttft_s"] <= 1.0 and best["tpot_s"] <= 0.030, best
    front = driver.execute_script("return window.explorer.charts.pareto_chart.data.datasets[0].data.length")
    assert front == len(serving["pareto"]) and front > 1
    time.sleep(0.3)
    driver.save_screenshot(screenshot)
    # A phone's screen (390 x 844 CSS pixels, as an iPhone 14): one column, nothing wider than it.
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {"width": 390, "height": 844, "deviceScaleFactor": 1, "mobile": True})
    time.sleep(0.5)
    wide, seen = driver.execute_script("return [document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    assert seen <= 390 and wide <= seen, f"the page is {wide} px wide on a {seen} px screen"
    narrow = screenshot[:-4] + "-narrow.png" if screenshot.endswith(".png") else screenshot + "-narrow.png"
    driver.save_screenshot(narrow)
    print(f"explorer: step time {step0} -> {step1} at x0.25 HBM bandwidth; sweep {len(pts)} points; serving best "
          f"tp{best['tp']} pp{best['pp']} dp{best['dp']} at {best['output_tokens_per_s_per_gpu']:.0f} tok/s/GPU; "
          f"screenshots {screenshot}, {narrow}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
