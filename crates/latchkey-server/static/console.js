// The console's one script: copy buttons, and the download of a file shown on the page (a client's
// client_secret.json) through a blob: URL, so that the secret is never in a URL the browser keeps. Pages work
// without it (the buttons stay hidden).
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  for (const link of document.querySelectorAll("a[data-json]")) {
    link.hidden = false;
    link.addEventListener("click", () => {
      const url = URL.createObjectURL(new Blob([link.dataset.json], { type: "application/json" }));
      link.href = url;
      setTimeout(() => URL.revokeObjectURL(url), 60000);
    });
  }
  if (!navigator.clipboard) return;
  for (const button of document.querySelectorAll("button[data-copy]")) {
    button.hidden = false;
    button.addEventListener("click", async () => {
      const source = document.getElementById(button.dataset.copy);
      if (!source) return;
      try {
        await navigator.clipboard.writeText(source.textContent.trim());
        button.textContent = "Copied";
      } catch {
        button.textContent = "Select and copy";
      }
    });
  }
});
