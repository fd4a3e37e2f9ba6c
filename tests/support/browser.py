"""The real Airflow UI in headless Chromium (Debian's chromium and chromedriver): a session that logs in as a user of
the simple auth manager, finds and clicks what a person would, and takes screenshots."""

import shutil
import time

import pytest

CHROMIUM, CHROMEDRIVER = shutil.which("chromium"), shutil.which("chromedriver")


def wait_for(what: str, probe, seconds: float = 600, every: float = 2):
    deadline = time.time() + seconds
    while not (found := probe()):
        if time.time() > deadline:
            raise TimeoutError(f"waited {seconds:.0f}s for {what}")
        time.sleep(every)
    return found


class Browser:
    """A headless Chromium session on the Airflow UI."""

    def __init__(self, base: str, screenshots):
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        if not (CHROMIUM and CHROMEDRIVER):
            pytest.fail(
                "Debian's chromium and chromium-driver are missing: sudo apt-get install chromium chromium-driver"
            )
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,1100"):
            options.add_argument(argument)
        self.driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
        self.driver.implicitly_wait(30)
        self.base, self.screenshots = base, screenshots

    def element(self, css: str):
        from selenium.webdriver.common.by import By

        return self.driver.find_element(By.CSS_SELECTOR, css)

    def text_of(self, css: str, seconds: float = 10) -> str:
        """The element's text, found again when the page replaced it in between (the Consistency view reloads itself
        when a running job ends)."""
        from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException

        deadline = time.time() + seconds
        while True:
            try:
                return self.element(css).text
            except (StaleElementReferenceException, NoSuchElementException):
                if time.time() > deadline:
                    raise
                time.sleep(0.2)

    def button(self, text: str):
        from selenium.webdriver.common.by import By

        return self.driver.find_element(By.XPATH, f"//button[normalize-space()='{text}']")

    def log_in(self, user: str, password: str) -> None:
        self.driver.delete_all_cookies()
        self.driver.get(self.base + "/auth/login")
        self.element("input[name=username]").send_keys(user)
        self.element("input[name=password]").send_keys(password)
        self.button("Sign in").click()
        wait_for("the login", lambda: "/auth/login" not in self.driver.current_url, seconds=60)

    def text(self) -> str:
        return self.driver.find_element("tag name", "body").text

    def click(self, xpath: str, seconds: float = 30) -> None:
        """Find and click, again when React re-rendered the element in between (a list refreshing its data)."""
        from selenium.common.exceptions import StaleElementReferenceException

        deadline = time.time() + seconds
        while True:
            try:
                element = self.driver.find_element("xpath", xpath)
                self.driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", element)
                element.click()
                return
            except StaleElementReferenceException:
                if time.time() > deadline:
                    raise
                time.sleep(0.5)

    def frame(self, title: str) -> None:
        """Into the UI's iframe of a plugin's view (its title is the view's name)."""
        self.driver.switch_to.default_content()
        self.driver.switch_to.frame(self.element(f"iframe[title='{title}']"))

    def shot(self, name: str) -> str:
        path = self.screenshots / f"{name}.png"
        self.driver.save_screenshot(str(path))
        print(f"screenshot: {path}")
        return str(path)

    def quit(self) -> None:
        self.driver.quit()


@pytest.fixture
def browser(tmp_path):
    session = None

    def open_on(base: str) -> Browser:
        nonlocal session
        session = Browser(base, tmp_path)
        return session

    yield open_on
    if session:
        session.quit()
