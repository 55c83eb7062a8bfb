"""reidrisk.pie"""
