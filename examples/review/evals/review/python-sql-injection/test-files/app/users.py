from flask import Blueprint, abort, jsonify, request

from app.db import get_db

bp = Blueprint("users", __name__, url_prefix="/users")


@bp.get("/<int:user_id>")
def get_user(user_id: int):
    row = get_db().execute(
        "SELECT id, name, email FROM users WHERE id = ?", (user_id,)
    ).fetchone()
    if row is None:
        abort(404)
    return jsonify(dict(row))


@bp.get("/search")
def search_users():
    name = request.args.get("name", "")
    query = f"SELECT id, name, email FROM users WHERE name LIKE '%{name}%' ORDER BY name"
    rows = get_db().execute(query).fetchall()
    return jsonify([dict(row) for row in rows])
