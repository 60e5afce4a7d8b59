// <semclip-clip src="https://clips.example.org/clips/WATCH/CLIP" interval="60">
//   fallback content, shown until the clip arrives
// </semclip-clip>
//
// A live semclip clip in any page. Served by semclip at /embed.js. Fetches
// the clip's sanitised HTML form with CORS (the server's cors_origins must
// name the page's origin), shows it in a shadow root (the page's styles do
// not leak in; style it through ::part(clip)), and every `interval` seconds
// (default 60) asks again with If-None-Match, so an unchanged clip costs a
// 304 and no body. Events: semclip-update (detail.etag) when the clip is
// shown or changed, semclip-error (detail.error) when a request fails; the
// last clip stays shown and the `data-error` attribute says why.
(function () {
  "use strict";
  if (!window.customElements || customElements.get("semclip-clip")) return;

  var DEFAULT_INTERVAL = 60;
  var MIN_INTERVAL = 1;

  class SemclipClip extends HTMLElement {
    static get observedAttributes() { return ["src", "interval"]; }

    constructor() {
      super();
      var root = this.attachShadow({ mode: "open" });
      this._body = document.createElement("div");
      this._body.setAttribute("part", "clip");
      // The element's own content shows until the clip arrives.
      this._body.appendChild(document.createElement("slot"));
      root.appendChild(this._body);
      this._etag = null;
      this._timer = null;
      this._generation = 0;
    }

    connectedCallback() { this._restart(); }

    disconnectedCallback() { this._stop(); }

    attributeChangedCallback(name, before, after) {
      if (before === after || !this.isConnected) return;
      if (name === "src") this._etag = null;
      this._restart();
    }

    _stop() {
      this._generation += 1;
      if (this._timer !== null) clearTimeout(this._timer);
      this._timer = null;
    }

    _restart() {
      this._stop();
      this._load(this._generation);
    }

    _interval() {
      var s = Number(this.getAttribute("interval") || DEFAULT_INTERVAL);
      if (!isFinite(s)) s = DEFAULT_INTERVAL;
      return Math.max(MIN_INTERVAL, s) * 1000;
    }

    _url() {
      var url = new URL(this.getAttribute("src"), document.baseURI);
      if (!url.searchParams.has("format")) url.searchParams.set("format", "html");
      return url;
    }

    async _load(generation) {
      if (!this.getAttribute("src")) return;
      var headers = { Accept: "text/html" };
      if (this._etag) headers["If-None-Match"] = this._etag;
      try {
        // no-store: the 304 comes to this code (the ETag is sent by hand)
        // instead of the browser's cache answering for it.
        var response = await fetch(this._url(), {
          headers: headers, mode: "cors", credentials: "omit", cache: "no-store"
        });
        if (generation !== this._generation) return;
        if (response.status === 200) {
          var html = await response.text();
          if (generation !== this._generation) return;
          this._etag = response.headers.get("ETag");
          // The clip is sanitised by the server; parsed in an inert
          // template, its nodes run nothing when they are inserted.
          var template = document.createElement("template");
          template.innerHTML = html;
          this._body.replaceChildren(template.content);
          this.removeAttribute("data-error");
          this.dispatchEvent(new CustomEvent("semclip-update", { detail: { etag: this._etag } }));
        } else if (response.status !== 304) {
          throw new Error("HTTP " + response.status);
        }
      } catch (error) {
        if (generation !== this._generation) return;
        var message = String((error && error.message) || error);
        this.setAttribute("data-error", message);
        this.dispatchEvent(new CustomEvent("semclip-error", { detail: { error: message } }));
      }
      var self = this;
      if (this.isConnected && generation === this._generation) {
        this._timer = setTimeout(function () { self._load(generation); }, this._interval());
      }
    }
  }

  customElements.define("semclip-clip", SemclipClip);
})();
