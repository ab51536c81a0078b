// Settings pages: the Copy button beside a key shown once. Without script the key stays selectable in its field.
"use strict";
document.querySelectorAll("button[data-copy]").forEach((button) => {
  const field = document.getElementById(button.dataset.copy);
  const said = document.querySelector(`[data-copied-for="${button.dataset.copy}"]`);
  button.hidden = false;
  button.addEventListener("click", async () => {
    try {
      await navigator.clipboard.writeText(field.value);
      said.textContent = "Copied.";
    } catch {
      field.select();  // no clipboard access (an insecure origin): leave it selected for Ctrl+C
      said.textContent = "Selected: press Ctrl+C to copy.";
    }
  });
});
