// The interactive API reference (/docs): Swagger UI over the service's OpenAPI document, from the page's own
// files (api/pages/reference.py). "Try it out" sends the reader's API key, given under Authorize, and is not kept.
"use strict";
window.addEventListener("DOMContentLoaded", function () {
  var root = document.getElementById("swagger-ui");
  window.ui = SwaggerUIBundle({url: root.dataset.document, domNode: root, deepLinking: true,
                               persistAuthorization: false, tryItOutEnabled: false});
});
