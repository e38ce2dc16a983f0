// docsan --html-report: toggling a stage hides its highlights; hovering one shows its label in a panel
// as well as in the tooltip. Inlined into each report; plain JavaScript, nothing fetched.
document.querySelectorAll('input[data-toggle]').forEach(function (box) {
  box.addEventListener('change', function () {
    var stage = box.getAttribute('data-toggle');
    document.querySelectorAll('mark.rm').forEach(function (m) {
      if (m.getAttribute('data-stage') === stage) { m.classList.toggle('off', !box.checked); }
    });
  });
});
var detail = document.getElementById('detail');
document.addEventListener('mouseover', function (e) {
  var m = e.target.closest ? e.target.closest('mark.rm') : null;
  if (m) { detail.textContent = m.title; detail.style.display = 'block'; } else { detail.style.display = 'none'; }
});
