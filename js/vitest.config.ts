import { playwright } from "@vitest/browser-playwright";
import { defineConfig } from "vitest/config";

// Debian's chromium, never a downloaded browser; the flags keep it off the (closed) network.
const chromium = process.env.PPVIZ_CHROMIUM ?? "/usr/bin/chromium";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    browser: {
      enabled: true,
      headless: true,
      screenshotFailures: false,
      provider: playwright({
        launchOptions: {
          executablePath: chromium,
          args: [
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
          ],
        },
      }),
      instances: [{ browser: "chromium", viewport: { width: 1100, height: 800 } }],
    },
  },
});
